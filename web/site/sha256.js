// @ts-check
/**
 * SHA-256 of a byte array, as lowercase hex.
 *
 * `crypto.subtle` only exists in secure contexts (https, localhost), but a site
 * is also opened over plain http on a LAN, where it must still refuse a
 * corrupted download; there the pure-JS fallback below does the work.
 * @module sha256
 */

const K = Uint32Array.from([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

/** @param {Uint32Array} words */
function toHex(words) {
  return Array.from(words, (w) => w.toString(16).padStart(8, '0')).join('');
}

/**
 * SHA-256 in plain JavaScript (FIPS 180-4), without copying the input.
 * @param {Uint8Array} bytes
 * @returns {string} lowercase hex digest
 */
export function sha256Js(bytes) {
  const h = Uint32Array.from([
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
  ]);
  const w = new Uint32Array(64);
  /** @param {Uint8Array} data @param {number} off */
  const block = (data, off) => {
    for (let i = 0; i < 16; i++) {
      const j = off + 4 * i;
      w[i] = (data[j] << 24) | (data[j + 1] << 16) | (data[j + 2] << 8) | data[j + 3];
    }
    for (let i = 16; i < 64; i++) {
      const a = w[i - 15];
      const b = w[i - 2];
      const s0 = ((a >>> 7) | (a << 25)) ^ ((a >>> 18) | (a << 14)) ^ (a >>> 3);
      const s1 = ((b >>> 17) | (b << 15)) ^ ((b >>> 19) | (b << 13)) ^ (b >>> 10);
      w[i] = (w[i - 16] + s0 + w[i - 7] + s1) | 0;
    }
    let [A, B, C, D, E, F, G, H] = h;
    for (let i = 0; i < 64; i++) {
      const S1 = ((E >>> 6) | (E << 26)) ^ ((E >>> 11) | (E << 21)) ^ ((E >>> 25) | (E << 7));
      const ch = (E & F) ^ (~E & G);
      const t1 = (H + S1 + ch + K[i] + w[i]) | 0;
      const S0 = ((A >>> 2) | (A << 30)) ^ ((A >>> 13) | (A << 19)) ^ ((A >>> 22) | (A << 10));
      const maj = (A & B) ^ (A & C) ^ (B & C);
      H = G;
      G = F;
      F = E;
      E = (D + t1) | 0;
      D = C;
      C = B;
      B = A;
      A = (t1 + S0 + maj) | 0;
    }
    h[0] += A; h[1] += B; h[2] += C; h[3] += D;
    h[4] += E; h[5] += F; h[6] += G; h[7] += H;
  };
  const length = bytes.length;
  const full = length - (length % 64);
  for (let off = 0; off < full; off += 64) block(bytes, off);
  const tail = new Uint8Array(length % 64 < 56 ? 64 : 128);
  tail.set(bytes.subarray(full));
  tail[length - full] = 0x80;
  const bits = length * 8;
  const view = new DataView(tail.buffer);
  view.setUint32(tail.length - 8, Math.floor(bits / 0x100000000));
  view.setUint32(tail.length - 4, bits >>> 0);
  for (let off = 0; off < tail.length; off += 64) block(tail, off);
  return toHex(h);
}

/**
 * SHA-256 with WebCrypto when the context has it, the JS fallback otherwise.
 * @param {Uint8Array} bytes
 * @returns {Promise<string>} lowercase hex digest
 */
export async function sha256Hex(bytes) {
  const subtle = globalThis.crypto?.subtle;
  if (subtle) {
    const digest = new Uint8Array(await subtle.digest('SHA-256', /** @type {Uint8Array<ArrayBuffer>} */ (bytes)));
    return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  }
  return sha256Js(bytes);
}
