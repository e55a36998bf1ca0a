// @ts-check
/**
 * Pyodide's `loadPackage` with the wheels' files written from a record instead of
 * unpacked (and a record made of what it unpacks), and that record's stored form.
 *
 * Pyodide unpacks every wheel in Python (`unpack_buffer`: zipfile, then the
 * `.dist-info` files it adds), in every page, and right after a snapshot restore its
 * Python runs slowly: numpy's wheel alone takes a sixth of a second or more. Writing
 * the same files from a record takes a tenth of that. A site keeps what a first visit
 * unpacked for the next (`web/site/unpacked.js`); the host's runner pages take it from
 * a record made with their snapshot (`ortweb.host.build.runner_snapshot`). Everything
 * else `loadPackage` does (download, integrity check, loading the shared libraries,
 * its records) is unchanged.
 * @module unpacking
 */

/**
 * @typedef {object} Unpacked what one wheel's unpacking did
 * @property {string} name    the wheel's file name
 * @property {string[]|null} dynlibs  what `unpack_buffer` returned (null: nothing)
 * @property {[string, Uint8Array][]} files  absolute path and content of each file it wrote
 */

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

/**
 * The stored form of what `unpackWith` recorded.
 * @param {Unpacked[]} recorded
 */
export function encodeUnpacked(recorded) {
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
 * What `encodeUnpacked` stored, by wheel file name, for `unpackWith`; throws on bytes
 * of another form.
 * @param {Uint8Array} bytes
 * @returns {Map<string, Unpacked>}
 */
export function decodeUnpacked(bytes) {
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
