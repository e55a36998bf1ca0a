// @ts-check
/**
 * A memory snapshot of Pyodide's interpreter, restored instead of initialising Python.
 *
 * A site ships one made at build time in headless Chromium (`ortweb/pyodide-snapshot.gz`,
 * see `ortweb.host.build.pyodide_snapshot`): in a browser with the same JSPI API
 * ({@link canRestoreBuilt}), every visit, the first included, boots from it
 * ({@link builtSnapshot}), in worker and main-thread mode.
 *
 * Elsewhere (a site built with `--no-snapshot`, Firefox, Safari), a worker-mode page
 * makes its own, under the site's service worker: on a visit with no snapshot, once the page is ready, a short-lived worker
 * (`snapshot_maker.js`) boots a bare Pyodide with `_makeSnapshot`, takes
 * `makeMemorySnapshot()` and stores it in Cache Storage, keyed by the sha256 of
 * Pyodide's core files; the site's own worker is not touched, and the first visit's
 * critical path does not wait for it. The next visit restores the interpreter from it
 * (`loadPyodide({_loadSnapshot})`) instead of initialising Python again, then loads
 * numpy and ortweb as usual.
 *
 * Only the bare interpreter is snapshotted: Pyodide 0.27.7 cannot snapshot loaded
 * packages with shared libraries (numpy's extension modules live in wasm modules the
 * snapshot does not hold; restoring one fails with "table index is out of bounds"),
 * and `_makeSnapshot` wraps every JS global Python sees in a proxy, so the site's own
 * session must not be the one that makes it.
 *
 * A snapshot of other core files (a rebuild with another Pyodide) has another key and
 * is never used; storing a new one removes the old. One that fails to restore is
 * deleted and Pyodide boots as usual.
 * @module snapshot
 */
import { wellFormedSnapshot as wellFormed } from './bridge/pyodide_boot.js';
import { sha256Hex } from './sha256.js';

/** Pyodide's files that decide what its interpreter's memory holds. */
const CORE = ['pyodide.mjs', 'pyodide.asm.js', 'pyodide.asm.wasm', 'python_stdlib.zip'];

/**
 * Where a site keeps its snapshot: the cache name and the key of this build's.
 * Null when the config does not list every core file with a sha256.
 * @param {any} config @param {(url: string) => string} absolute
 * @param {string} base the page's URL
 */
export async function snapshotPlace(config, absolute, base) {
  const indexURL = absolute(config.pyodide.indexURL);
  /** @type {Map<string, string>} */
  const shas = new Map();
  for (const entry of [...config.assets, ...(config.modules ?? [])]) {
    const url = absolute(entry.url);
    if (entry.sha256 && url.startsWith(indexURL) && CORE.includes(url.slice(indexURL.length))) {
      shas.set(url.slice(indexURL.length), entry.sha256);
    }
  }
  if (shas.size !== CORE.length) return null;
  const id = await sha256Hex(new TextEncoder().encode(CORE.map((name) => shas.get(name)).join(' ')));
  const root = new URL('.', base).href;
  return {
    cacheName: `ortweb-snapshot ${root}`,
    key: `${root}ortweb-pyodide.snapshot?runtime=${id}`,
  };
}

/**
 * Whether this browser can restore the snapshot the build shipped: the site has one,
 * and `WebAssembly` has the JSPI API of the engine that made it (a snapshot records
 * it; restored elsewhere, Pyodide's `run_sync` fails or aborts). Firefox and Safari
 * boot as usual.
 * @param {any} config
 */
export function canRestoreBuilt(config) {
  return Boolean(config.snapshot) && typeof WebAssembly === 'object' &&
    String(config.snapshot.jspi) in WebAssembly;
}

/**
 * Where a visit keeps the build's snapshot unpacked for the next one: beside a
 * browser-made one, keyed by the shipped file's sha256 too.
 * @param {{cacheName: string, key: string}} place {@link snapshotPlace}
 * @param {any} config
 */
export function keptPlace(place, config) {
  return { cacheName: place.cacheName, key: `${place.key}&built=${config.snapshot.sha256}` };
}

/**
 * The snapshot the build shipped (`config.snapshot`: made in headless Chromium by
 * `ortweb site`, gzipped), unpacked; null where this browser cannot restore or unpack
 * it, or it is not a whole snapshot (Pyodide then boots as usual). Its bytes are
 * checked against the manifest like every file: a changed file fails the page by name.
 * With `kept` ({@link keptPlace}) an earlier visit's unpacked copy is taken when there
 * is one: unpacking costs CPU on every visit, reading the copy almost none (README,
 * *Pyodide's memory snapshot*). `kept: false` in the result says the bytes were downloaded,
 * for {@link keepBuilt} once the page is ready.
 * @param {any} config
 * @param {{bytesOf: (url: string) => Promise<Uint8Array>, stored: (url: string) => Promise<boolean>}} loader
 * @param {{cacheName: string, key: string}|null} [kept]
 * @returns {Promise<{bytes: Uint8Array, kept: boolean}|null>}
 */
export async function builtSnapshot(config, loader, kept = null) {
  if (!canRestoreBuilt(config)) return null;
  if (kept) {
    const bytes = await loadSnapshot(kept);
    if (bytes) return { bytes, kept: true };
  }
  // A first visit boots as usual: on a real link the snapshot's bytes cost more than
  // the boot they save. Later visits take it from the service worker's cache.
  if (typeof DecompressionStream === 'undefined' || !await loader.stored(config.snapshot.url)) {
    return null;
  }
  const packed = await loader.bytesOf(config.snapshot.url);
  let bytes;
  try {
    const stream = new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (packed)]).stream()
      .pipeThrough(new DecompressionStream('gzip'));
    bytes = new Uint8Array(await new Response(stream).arrayBuffer());
  } catch (err) {
    console.warn(`ortweb: ${config.snapshot.url} did not unpack (${err}); booting Pyodide as usual`);
    return null;
  }
  if (wellFormed(bytes)) return { bytes, kept: false };
  console.warn(`ortweb: ${config.snapshot.url} is not a whole Pyodide snapshot; booting Pyodide as usual`);
  return null;
}

/**
 * Store `bytes` at `place` as its cache's one entry, the site's one snapshot (or its
 * kept wheels, unpacked.js): the other entries (an older build's, a browser-made
 * snapshot this browser no longer needs) are deleted.
 * @param {{cacheName: string, key: string}} place
 * @param {Uint8Array} bytes
 */
export async function keepOnly(place, bytes) {
  const cache = await caches.open(place.cacheName);
  for (const request of await cache.keys()) {
    if (request.url !== place.key) await cache.delete(request);
  }
  await cache.put(place.key, new Response(/** @type {Uint8Array<ArrayBuffer>} */ (bytes),
    { headers: { 'Content-Type': 'application/octet-stream' } }));
}

/**
 * Once a visit restored from the build's snapshot it downloaded ({@link builtSnapshot}
 * with `kept`), store it unpacked at `kept` for the next visit: `{stored: true, kept:
 * true, bytes, ms}` or `{stored: false, error}`; null when there is nothing to keep (no
 * `kept`, a usual boot, or the bytes came from `kept` already).
 * @param {{cacheName: string, key: string}|null} kept
 * @param {Promise<{bytes: Uint8Array, kept: boolean}|null>|null} built
 * @param {string|null} bootedFrom `'snapshot'` or `'fresh'`
 */
export async function keepBuilt(kept, built, bootedFrom) {
  const downloaded = kept && built && bootedFrom === 'snapshot' ? await built : null;
  if (!kept || !downloaded || downloaded.kept) return null;
  const start = performance.now();
  const bytes = downloaded.bytes.length;
  return keepOnly(kept, downloaded.bytes).then(
    () => ({ stored: true, kept: true, bytes, ms: performance.now() - start }),
    (err) => ({ stored: false, error: String(err) }));
}

/**
 * The stored snapshot of this build, or null (none, or no Cache Storage). A damaged
 * one is deleted.
 * @param {{cacheName: string, key: string}} place
 * @returns {Promise<Uint8Array|null>}
 */
export async function loadSnapshot(place) {
  let bytes;
  try {
    const hit = await (await caches.open(place.cacheName)).match(place.key);
    if (!hit) return null;
    bytes = new Uint8Array(await hit.arrayBuffer());
  } catch {
    return null;
  }
  if (wellFormed(bytes)) return bytes;
  console.warn('ortweb: the memory snapshot did not restore (it is not a whole Pyodide ' +
    'snapshot); booting Pyodide as usual');
  await dropSnapshot(place);
  return null;
}

/** @param {{cacheName: string, key: string}} place */
export async function dropSnapshot(place) {
  try {
    await (await caches.open(place.cacheName)).delete(place.key);
  } catch {
    // Nothing stored, or no Cache Storage: nothing to drop.
  }
}

/**
 * Make and store this build's snapshot in a worker of its own (`snapshot_maker.js`);
 * resolves to what it reports: `{stored: true, bytes, ms}` or `{stored: false, error}`.
 * @param {string} makerURL absolute URL of snapshot_maker.js
 * @param {{cacheName: string, key: string}} place
 * @param {string} indexURL absolute
 * @param {string} lockURL absolute
 */
export function makeSnapshot(makerURL, place, indexURL, lockURL) {
  return new Promise((resolve) => {
    /** @type {Worker} */
    let maker;
    try {
      maker = new Worker(makerURL, { type: 'module', name: 'ortweb-snapshot' });
    } catch (err) {
      resolve({ stored: false, error: String(err) });
      return;
    }
    const done = (/** @type {any} */ result) => {
      maker.terminate();
      resolve(result);
    };
    maker.addEventListener('message', (event) => done(event.data));
    maker.addEventListener('error', (event) => {
      event.preventDefault();
      done({ stored: false, error: event.message || 'the snapshot worker failed to start' });
    });
    maker.postMessage({ place, indexURL, lockURL });
  });
}
