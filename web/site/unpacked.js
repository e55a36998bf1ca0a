// @ts-check
/**
 * What Pyodide's `loadPackage` unpacked from the site's wheels, kept for the next visit.
 *
 * Pyodide unpacks every wheel in Python (`unpack_buffer`: zipfile, then the
 * `.dist-info` files it adds), on every visit, and right after a snapshot restore its
 * Python runs slowly: numpy's wheel alone took a quarter of a second on a second
 * visit. So while the packages load, a visit records the files each wheel's unpacking
 * wrote and the shared libraries it reported, and once the page is ready it stores them
 * in Cache Storage (`ortweb-unpacked <site URL>`), keyed by Pyodide's core files, the
 * lock's sha256 and the packages. The next visit writes those files itself and hands
 * Pyodide the same list of shared libraries, which it loads as usual; everything else
 * `loadPackage` does (download, integrity check, loading the libraries, its records)
 * is unchanged. The packages' bytecode the site ships (python.js) is kept the same way.
 * Kept only under the site's service worker, like the snapshot. A wheel
 * with a `.data` folder (whose unpacking writes outside the install folder) is never
 * kept; one whose entry is missing or unreadable is unpacked by Pyodide as usual.
 * @module unpacked
 */
import { decodeUnpacked, encodeUnpacked } from './bridge/unpacking.js';
import { keepOnly } from './snapshot.js';

/** @typedef {import('./bridge/unpacking.js').Unpacked} Unpacked */
/** @typedef {ReturnType<typeof import('./bridge/unpacking.js').unpackWith>} Unpacking */

/**
 * Where this build's unpacked wheels are kept, beside its snapshot place
 * (`snapshot.js`'s `snapshotPlace`); null where
 * there is none, or the lock has no sha256.
 * @param {{cacheName: string, key: string}|null} site
 * @param {any} config @param {(url: string) => string} absolute
 * @returns {{cacheName: string, key: string}|null}
 */
export function unpackedPlace(site, config, absolute) {
  const lockURL = absolute(config.pyodide.lockURL);
  const lock = config.assets.find((/** @type {any} */ a) => absolute(a.url) === lockURL);
  if (!site || !lock?.sha256) return null;
  const packages = encodeURIComponent([...config.packages].sort().join(','));
  return {
    cacheName: site.cacheName.replace('ortweb-snapshot', 'ortweb-unpacked'),
    key: `${site.key.replace('ortweb-pyodide.snapshot', 'ortweb-unpacked')}&lock=${lock.sha256}` +
      `&packages=${packages}`,
  };
}

/**
 * The kept wheels of `place`, by file name, read once `first` has settled; null when
 * there are none (or no place). A damaged entry is deleted.
 * @param {{cacheName: string, key: string}|null} place
 * @param {Promise<unknown>} first what is read before: the snapshot, which Pyodide needs
 *   first, so that the wheels are read while it restores; its failure is this one's
 * @returns {Promise<Map<string, Unpacked>|null>}
 */
export async function loadUnpacked(place, first) {
  if (!place) return null;
  await first;
  let cache;
  let bytes;
  try {
    cache = await caches.open(place.cacheName);
    const hit = await cache.match(place.key);
    if (!hit) return null;
    bytes = new Uint8Array(await hit.arrayBuffer());
  } catch {
    return null;
  }
  try {
    return decodeUnpacked(bytes);
  } catch (err) {
    console.warn('ortweb: the kept unpacked wheels are damaged; Pyodide unpacks the wheels', err);
    await cache.delete(place.key).catch(() => {});
    return null;
  }
}

/**
 * Store what a visit recorded at `place` (the site's one entry: older builds' go):
 * `{stored: true, bytes, ms}` or `{stored: false, error}`.
 * @param {{cacheName: string, key: string}} place
 * @param {Unpacked[]} recorded
 */
export async function keepUnpacked(place, recorded) {
  const start = performance.now();
  try {
    const bytes = encodeUnpacked(recorded);
    await keepOnly(place, bytes);
    return { stored: true, bytes: bytes.length, ms: performance.now() - start };
  } catch (err) {
    return { stored: false, error: String(err) };
  }
}

/**
 * After a visit is ready: where its wheels came from (`from`: 'kept' or 'wheels'), and
 * whether what it unpacked is now kept for the next visit: `{from: 'kept'}` when it
 * unpacked nothing new, else `{from, stored: true, bytes, ms}` or `{from, stored: false,
 * error}` (a second visit adds the packages' bytecode, which a first one does not use,
 * to the wheels the first kept).
 * @param {{cacheName: string, key: string}|null} place
 * @param {Unpacking|null} unpacking
 */
export async function keepPackages(place, unpacking) {
  const from = unpacking?.used.length ? 'kept' : 'wheels';
  if (from === 'kept' && !unpacking?.recorded.length) return { from };
  if (!place) return { from, stored: false, error: 'nothing is kept here (no service worker)' };
  if (!unpacking?.recorded.length) return { from, stored: false, error: 'no wheel to keep' };
  return { from, ...await keepUnpacked(place, [...unpacking.used, ...unpacking.recorded]) };
}
