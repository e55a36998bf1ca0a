// @ts-check
/**
 * Models and external data files given by URL: fetched here, straight into one
 * JS buffer that Python reads in pages (for the model's description) and
 * onnxruntime-web is then given, so their bytes never pass through Python's heap.
 *
 * A download reports its progress as it goes, is checked against its
 * Content-Length (and a `#sha256=<hex>` fragment when the URL has one), and only
 * then kept in ortweb's file cache (file_cache.js: the Origin Private File System),
 * so a second load of the same URL makes no network request and a cut or failed
 * download leaves nothing behind.
 * @module fetching
 */

import { BridgeError } from './errors.js';
import { listEntries, openStore, readEntry, removeEntries, writeEntry } from './file_cache.js';
/** Progress is reported at most this often (ms), and at the end. */
const PROGRESS_EVERY_MS = 50;

/**
 * @typedef {object} Fetched
 * @property {number} status  HTTP status (200 from the cache)
 * @property {string} statusText
 * @property {Uint8Array|null} bytes  the whole file; null when status is not 2xx
 * @property {boolean} fromCache
 */

/**
 * @callback Progress
 * @param {number} loaded bytes so far
 * @param {number} total the size, or -1 while unknown (no Content-Length)
 * @returns {any}
 */

/**
 * The sha256 a URL's `#sha256=<hex>` fragment asks for, or ''.
 * @param {string} url
 */
export function expectedSha256(url) {
  const found = /[#&]sha256=([0-9a-fA-F]{64})(?:&|$)/.exec(new URL(url, globalThis.location?.href).hash);
  return found ? found[1].toLowerCase() : '';
}

/**
 * The cache key: the URL without its fragment, with `ortweb-sha256` when the hash is known.
 * @param {string} url
 * @param {string} sha
 */
function cacheKey(url, sha) {
  const key = new URL(url, globalThis.location?.href);
  key.hash = '';
  if (sha) key.searchParams.set('ortweb-sha256', sha);
  return key.href;
}

/** A cache key without its hash: the URL `cacheInfo` lists. @param {string} key */
function keyURL(key) {
  const url = new URL(key);
  url.searchParams.delete('ortweb-sha256');
  return url.href;
}

/** Whether this page can hash (WebCrypto's digest needs a secure context). */
export const canHash = () => typeof globalThis.crypto?.subtle?.digest === 'function';

/** @param {Uint8Array} bytes */
export async function sha256Hex(bytes) {
  const digest = await crypto.subtle.digest('SHA-256', /** @type {Uint8Array<ArrayBuffer>} */ (bytes));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * A progress reporter that calls `progress` at most every PROGRESS_EVERY_MS and
 * always for the last byte; a throw from it stops the download.
 * @param {Progress|null} progress
 */
function reporter(progress) {
  let last = -Infinity;
  /** @param {number} loaded @param {number} total @param {boolean} [final] */
  return (loaded, total, final = false) => {
    if (!progress) return;
    const now = performance.now();
    if (!final && now - last < PROGRESS_EVERY_MS) return;
    last = now;
    progress(loaded, total);
  };
}

/**
 * The body of `response`, read chunk by chunk into one buffer.
 * @param {Response} response
 * @param {number} size the expected size, or -1 when unknown
 * @param {ReturnType<typeof reporter>} report
 * @param {string} url for messages
 */
async function readBody(response, size, report, url) {
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    report(bytes.length, bytes.length, true);
    return bytes;
  }
  const reader = response.body.getReader();
  // A known size: one buffer, filled in place (no concatenation of chunks).
  let buffer = new Uint8Array(size >= 0 ? size : 1 << 20);
  let loaded = 0;
  report(0, size, true);
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (loaded + value.length > buffer.length) {
        if (size >= 0) {
          throw new BridgeError('NoSuchFile', `${url}: the server sent more than the ${size} bytes its Content-Length says`);
        }
        const bigger = new Uint8Array(Math.max(buffer.length * 2, loaded + value.length));
        bigger.set(buffer.subarray(0, loaded));
        buffer = bigger;
      }
      buffer.set(value, loaded);
      loaded += value.length;
      report(loaded, size);
    }
  } catch (err) {
    await reader.cancel().catch(() => {});
    // A dropped connection (fetch's TypeError): the file was not read.
    if (err instanceof TypeError) {
      const of = size >= 0 ? ` of ${size}` : '';
      throw new BridgeError('NoSuchFile', `${url}: the download failed after ${loaded}${of} bytes (${err.message})`);
    }
    throw err;
  }
  if (size >= 0 && loaded !== size) {
    throw new BridgeError('NoSuchFile', `${url}: the download stopped after ${loaded} of the ${size} bytes its Content-Length says`);
  }
  report(loaded, loaded, true);
  return loaded === buffer.length ? buffer : buffer.slice(0, loaded);
}

/**
 * The size a response's Content-Length gives for its body, or -1.
 * @param {Response} response
 */
function declaredSize(response) {
  const length = response.headers.get('Content-Length');
  // A compressed response's length is not the file's.
  if (length === null || response.headers.get('Content-Encoding')) return -1;
  const size = Number(length);
  return Number.isSafeInteger(size) && size >= 0 ? size : -1;
}

/** @type {Map<string, Promise<void>>} cache key → its write still under way */
const storing = new Map();

/** Wait for writes under way (for `key`, or all). @param {string} [key] */
async function settled(key) {
  if (key === undefined) await Promise.all(storing.values());
  else await storing.get(key);
}

/**
 * Keep a verified download, in the background: the load goes on meanwhile, and a
 * load of the same URL, cacheInfo and clearCache wait for it (in this page; other
 * pages wait on the entry's lock). The file is written from `bytes` a piece at a
 * time, so no copy of the whole file is added. A refused write (a full disk, the
 * quota) only costs the next load a download.
 * @param {FileSystemDirectoryHandle} dir @param {string} key @param {Uint8Array} bytes @param {string} sha
 */
function store(dir, key, bytes, sha) {
  const write = writeEntry(dir, key, keyURL(key), bytes, sha).catch((err) => {
    console.warn(`ortweb: could not keep ${key} (${bytes.length} bytes) in the file cache: ${err}`);
  }).finally(() => {
    if (storing.get(key) === write) storing.delete(key);
  });
  storing.set(key, write);
}

/**
 * Fetch a model or external data file into one buffer.
 * @param {string} url absolute, or relative to the page
 * @param {{cache?: boolean, progress?: Progress|null}} [options] `cache` (default
 *   true): read from and keep in the file cache
 * @returns {Promise<Fetched>}
 */
export async function fetchFile(url, options = {}) {
  const useCache = options.cache ?? true;
  const report = reporter(options.progress ?? null);
  const sha = expectedSha256(url);
  const key = cacheKey(url, sha);
  // http(s) only: a blob: or data: URL is in memory anyway.
  const dir = useCache && /^https?:$/.test(new URL(key).protocol) ? await openStore() : null;
  if (dir) {
    await settled(key);
    // Local, so progress jumps from 0 to the end.
    const bytes = await readEntry(dir, key, (size) => report(0, size, true));
    if (bytes) {
      report(bytes.length, bytes.length, true);
      return { status: 200, statusText: 'OK', bytes, fromCache: true };
    }
  }
  const plain = new URL(url, globalThis.location?.href);
  plain.hash = '';
  let response;
  try {
    response = await fetch(plain.href);
  } catch (err) {
    throw new BridgeError('NoSuchFile', `cannot fetch ${url}: ${err instanceof Error ? err.message : err} (offline, refused, or blocked by CORS)`);
  }
  if (!response.ok) {
    await response.body?.cancel().catch(() => {});
    return { status: response.status, statusText: response.statusText, bytes: null, fromCache: false };
  }
  const bytes = await readBody(response, declaredSize(response), report, url);
  if (sha) {
    if (!canHash()) {
      throw new BridgeError('InvalidArgument', `${url}: a #sha256= fragment is checked with WebCrypto, which this page lacks (not a secure context: serve it over https or from localhost)`);
    }
    const got = await sha256Hex(bytes);
    if (got !== sha) {
      throw new BridgeError('NoSuchFile', `${url}: the file's sha256 is ${got}, the URL's #sha256= asks for ${sha}`);
    }
  }
  if (dir) store(dir, key, bytes, sha);
  return { status: response.status, statusText: response.statusText, bytes, fromCache: false };
}

/**
 * What ortweb keeps in its file cache.
 * @returns {Promise<{available: boolean, files: {url: string, size: number, sha256: string, stored: string}[]}>}
 */
export async function cacheInfo() {
  const dir = await openStore();
  if (!dir) return { available: false, files: [] };
  await settled();
  const files = (await listEntries(dir)).map(({ url, size, sha256, stored }) => ({ url, size, sha256, stored }));
  return { available: true, files };
}

/**
 * Remove files from the file cache: those of `url` (any hash), or all.
 * @param {string|null} url
 * @returns {Promise<number>} how many entries went
 */
export async function clearCache(url) {
  const dir = await openStore();
  if (!dir) return 0;
  await settled();
  return removeEntries(dir, url ? cacheKey(url, '') : null);
}
