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
import { keepOnly } from './snapshot.js';

/**
 * @typedef {object} Unpacked what one wheel's unpacking did
 * @property {string} name    the wheel's file name
 * @property {string[]|null} dynlibs  what `unpack_buffer` returned (null: nothing)
 * @property {[string, Uint8Array][]} files  absolute path and content of each file it wrote
 */

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
    return decode(bytes);
  } catch (err) {
    console.warn('ortweb: the kept unpacked wheels are damaged; Pyodide unpacks the wheels', err);
    await cache.delete(place.key).catch(() => {});
    return null;
  }
}

/**
 * While Pyodide's packages load: wheels in `kept` are written from there, the others
 * are unpacked by Pyodide and recorded. Returns the records, the function that puts
 * Pyodide's own loader back, and `archive` for other archives unpacked after.
 * @param {any} pyodide
 * @param {Map<string, Unpacked>|null} kept
 */
export function unpackWith(pyodide, kept) {
  const api = pyodide._api;
  const FS = pyodide.FS;
  const loader = api.package_loader;
  /** @type {Unpacked[]} */
  const recorded = [];
  /** @type {Unpacked[]} */
  const used = [];
  /** @type {Set<string>} folders made while writing kept files */
  const folders = new Set();

  /**
   * Write `name`'s files from `kept`, or run `unpack` and record the files it wrote
   * under `root` (a wheel whose data files go elsewhere is not recorded).
   * @param {string} name @param {string} root @param {() => any} unpack
   * @param {(result: any) => string[]|null} dynlibs
   */
  function once(name, root, unpack, dynlibs) {
    const entry = kept?.get(name);
    if (entry) {
      for (const [path, data] of entry.files) {
        // FS.mkdirTree tries every level of a path and catches an exception for each
        // one that exists: once per folder, not once per file.
        const folder = path.slice(0, path.lastIndexOf('/'));
        if (!folders.has(folder)) {
          FS.mkdirTree(folder);
          folders.add(folder);
        }
        FS.writeFile(path, data);
      }
      used.push(entry);
      return entry.dynlibs ? [...entry.dynlibs] : undefined;
    }
    const { result, paths } = opensForWriting(FS, unpack);
    const prefix = absoluteOf(FS, root.endsWith('/') ? root : `${root}/`);
    const files = [...paths].sort()
      .filter((path) => path.startsWith(prefix) && FS.analyzePath(path).exists &&
        FS.isFile(FS.stat(path).mode))
      .map((path) => /** @type {[string, Uint8Array]} */ ([path, FS.readFile(path)]));
    const data = files.some(([path]) => path.slice(prefix.length).split('/')[0].endsWith('.data'));
    if (name && !data) recorded.push({ name, dynlibs: dynlibs(result), files });
    return result;
  }

  const unpackBuffer = loader.unpack_buffer;
  const callKwargs = (/** @type {any} */ kw) => once(
    String(kw.filename ?? '').split('/').pop() ?? '', String(kw.extract_dir ?? '.'),
    () => unpackBuffer.callKwargs(kw), (result) => (result ? Array.from(result, String) : null));
  api.package_loader = new Proxy(loader, {
    get: (target, key) => (key === 'unpack_buffer' ? { callKwargs } : Reflect.get(target, key)),
  });
  return {
    /** What was unpacked and recorded. */
    recorded,
    /** What was written from `kept`. */
    used,
    restore() { api.package_loader = loader; },
    /**
     * Another archive: written from `kept` when it has `name`, else `unpack` runs and
     * what it wrote under `root` is recorded.
     * @param {string} name @param {string} root @param {() => void} unpack
     */
    archive(name, root, unpack) { once(name, root, unpack, () => null); },
  };
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
    const bytes = encode(recorded);
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
 * @param {ReturnType<typeof unpackWith>|null} unpacking
 */
export async function keepPackages(place, unpacking) {
  const from = unpacking?.used.length ? 'kept' : 'wheels';
  if (from === 'kept' && !unpacking?.recorded.length) return { from };
  if (!place) return { from, stored: false, error: 'nothing is kept here (no service worker)' };
  if (!unpacking?.recorded.length) return { from, stored: false, error: 'no wheel to keep' };
  return { from, ...await keepUnpacked(place, [...unpacking.used, ...unpacking.recorded]) };
}

/**
 * Run `run`, noting every file it opens for writing (Emscripten's FS tracking hooks,
 * chained to any already set): its result and those files' absolute paths, as they
 * are at the end (renamed files under their new name, deleted ones left out).
 * @param {any} FS @param {() => any} run
 */
function opensForWriting(FS, run) {
  /** @type {Set<string>} */
  const paths = new Set();
  const delegate = FS.trackingDelegate;
  const saved = {
    onOpenFile: delegate.onOpenFile, onMovePath: delegate.onMovePath, onDeletePath: delegate.onDeletePath,
  };
  // O_WRONLY or O_RDWR: the file is written (an empty one too).
  delegate.onOpenFile = (/** @type {string} */ path, /** @type {number} */ flags) => {
    saved.onOpenFile?.(path, flags);
    if (flags & 3) paths.add(absoluteOf(FS, path));
  };
  delegate.onMovePath = (/** @type {string} */ from, /** @type {string} */ to) => {
    saved.onMovePath?.(from, to);
    if (paths.delete(absoluteOf(FS, from))) paths.add(absoluteOf(FS, to));
  };
  delegate.onDeletePath = (/** @type {string} */ path) => {
    saved.onDeletePath?.(path);
    paths.delete(absoluteOf(FS, path));
  };
  try {
    return { result: run(), paths };
  } finally {
    for (const [key, value] of Object.entries(saved)) {
      if (value) delegate[key] = value;
      else delete delegate[key];
    }
  }
}

/** @param {any} FS @param {string} path */
function absoluteOf(FS, path) {
  // As FS.open normalises them: `//lib/x` (sysconfig's site-packages) is `/lib/x`.
  return (path.startsWith('/') ? path : `${FS.cwd()}/${path}`).replace(/\/{2,}/g, '/');
}

/** The stored form: a little-endian u32 header length, the JSON header, the files' bytes. */
const MAGIC = 'ortweb-unpacked 1';

/** @param {Unpacked[]} recorded */
function encode(recorded) {
  let offset = 0;
  const header = {
    magic: MAGIC,
    wheels: recorded.map((w) => ({
      name: w.name,
      dynlibs: w.dynlibs,
      files: w.files.map(([path, data]) => {
        const at = offset;
        offset += data.length;
        return [path, at, data.length];
      }),
    })),
  };
  const head = new TextEncoder().encode(JSON.stringify(header));
  const out = new Uint8Array(4 + head.length + offset);
  new DataView(out.buffer).setUint32(0, head.length, true);
  out.set(head, 4);
  let at = 4 + head.length;
  for (const w of recorded) {
    for (const [, data] of w.files) {
      out.set(data, at);
      at += data.length;
    }
  }
  return out;
}

/**
 * @param {Uint8Array} bytes
 * @returns {Map<string, Unpacked>}
 */
function decode(bytes) {
  const length = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, 4 + length)));
  if (header.magic !== MAGIC) throw new Error(`not ${MAGIC}`);
  const body = bytes.subarray(4 + length);
  /** @type {Map<string, Unpacked>} */
  const wheels = new Map();
  for (const w of header.wheels) {
    const files = w.files.map((/** @type {[string, number, number]} */ [path, at, size]) => {
      if (at + size > body.length) throw new Error(`${path} runs past the end`);
      return [path, body.subarray(at, at + size)];
    });
    wheels.set(w.name, { name: w.name, dynlibs: w.dynlibs, files });
  }
  return wheels;
}
