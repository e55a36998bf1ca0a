// @ts-check
/**
 * Booting Pyodide offline with verified packages.
 *
 * `loadPackage` only logs when a file is missing or its sha256 does not match the
 * lock file; it does not throw. So every requested package is checked in
 * `pyodide.loadedPackages` afterwards, and a miss fails loudly.
 * @module pyodide_boot
 */

/**
 * @typedef {object} BootOptions
 * @property {string} indexURL       folder of Pyodide's core files (ends with '/')
 * @property {string} [lockFileURL]  lock file listing the packages (defaults to indexURL + 'pyodide-lock.json')
 * @property {string[]} [packages]   packages to load from the lock (default numpy + ortweb)
 * @property {string} [offlineListURL] set-up's offline-packages.json: the lock's packages whose
 *   wheels are not here are dropped from it, and importing one of them fails by name
 * @property {(line: string) => void} [stdout]
 * @property {(line: string) => void} [stderr]
 * @property {(msg: string) => void} [progress] messages about what is loading
 * @property {{_loadSnapshot?: Uint8Array} & Object<string, any>} [loadOptions] more options
 *   for `loadPyodide`; with `_loadSnapshot`
 *   (a memory snapshot of the interpreter), the restored interpreter is given what a
 *   fresh boot has (see asFreshBoot)
 * @property {(pyodide: any) => Promise<() => void>} [aroundPackages] called once Pyodide
 *   is up, before the packages load; what it resolves to is called once they have (a
 *   site's kept unpacked wheels, web/site/unpacked.js)
 */

/**
 * Load Pyodide and the packages; resolves to the Pyodide API object.
 * @param {BootOptions} options
 */
export async function bootPyodide(options) {
  const indexURL = new URL(options.indexURL, globalThis.location?.href).href;
  let lockFileURL = options.lockFileURL ?? indexURL + 'pyodide-lock.json';
  /** @type {Object<string, string>} import name → package that is not available offline */
  let missingImports = {};
  if (options.offlineListURL) {
    ({ lockFileURL, missingImports } = await offlineLock(lockFileURL, options.offlineListURL));
  }
  const packages = options.packages ?? ['numpy', 'ortweb'];
  const progress = options.progress ?? (() => {});
  progress('loading Pyodide');
  const snapshot = options.loadOptions?._loadSnapshot;
  if (snapshot && !wellFormedSnapshot(snapshot)) {
    // Pyodide would log "wasm instantiation failed" and never settle.
    throw new Error('the memory snapshot given to boot from is not a whole Pyodide snapshot');
  }
  const { loadPyodide } = await import(indexURL + 'pyodide.mjs');
  const pyodide = await loadPyodide({
    indexURL,
    lockFileURL,
    stdout: options.stdout,
    stderr: options.stderr,
    // Nothing may come from a CDN: packages are only taken from indexURL.
    packageCacheDir: indexURL,
    ...options.loadOptions,
  });
  if (snapshot) asFreshBoot(pyodide);
  keepStdlibZipListing(pyodide);
  if (Object.keys(missingImports).length) installMissingHook(pyodide, missingImports);
  /** @type {string[]} */
  const problems = [];
  progress(`loading ${packages.join(', ')}`);
  const after = await options.aroundPackages?.(pyodide);
  try {
    await pyodide.loadPackage(packages, {
      messageCallback: () => {},
      errorCallback: (/** @type {string} */ msg) => problems.push(msg),
      checkIntegrity: true,
    });
  } finally {
    after?.();
  }
  const missing = packages.filter((p) => !(p in pyodide.loadedPackages));
  if (missing.length || problems.length) {
    throw new Error(`Pyodide packages failed to load: ${missing.join(', ') || '(none missing)'}; ${problems.join(' | ')}`);
  }
  return pyodide;
}

/**
 * Put packages' bytecode beside their source (`__pycache__/*.pyc`, unchecked-hash:
 * imported without comparing timestamps), so that importing them compiles nothing
 * (a site's, or the runner pages' numpy). One that does not unpack only costs the
 * compile: said on the console.
 * @param {any} pyodide
 * @param {Uint8Array} bytes a zip of files named by their path from `/`
 */
export function unpackBytecode(pyodide, bytes) {
  try {
    pyodide.unpackArchive(bytes, 'zip', { extractDir: '/' });
  } catch (err) {
    console.warn('ortweb: the packages\' bytecode did not unpack; Python compiles their source', err);
  }
}

/** `makeMemorySnapshot`'s first word (Pyodide 0.27.7's snapshot.ts). */
const SNAPSHOT_MAGIC = 1886286592;
const WASM_PAGE = 65536;

/**
 * Whether `bytes` has the shape of a Pyodide memory snapshot: its magic number, a
 * header that fits, and a heap of whole wasm pages. One that does not would not fail
 * cleanly: Pyodide logs "wasm instantiation failed" and its `loadPyodide` never settles.
 * @param {Uint8Array} bytes
 */
export function wellFormedSnapshot(bytes) {
  if (bytes.byteLength < 64 || bytes.byteLength % 4) return false;
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, 4);
  const heap = bytes.byteLength - words[1];
  return words[0] === SNAPSHOT_MAGIC && words[1] >= 48 && heap >= 16 * WASM_PAGE &&
    heap % WASM_PAGE === 0;
}

/** @param {string} url */
async function fetchJSON(url) {
  const response = await fetch(url);
  if (!response.ok) {
    throw new Error(`cannot load ${url}: HTTP ${response.status}` +
      (url.endsWith('offline-packages.json') ? ' (run `python3 build.py setup`)' : ''));
  }
  return response.json();
}

/**
 * The lock without the packages whose wheels set-up could not obtain: offered, they
 * would only send Pyodide and micropip to a file that is not there. File names are
 * made absolute, since the new lock lives at a blob: URL.
 * @param {string} lockURL
 * @param {string} offlineListURL
 */
async function offlineLock(lockURL, offlineListURL) {
  const absoluteLock = new URL(lockURL, globalThis.location?.href).href;
  const [lock, offline] = await Promise.all([fetchJSON(absoluteLock), fetchJSON(offlineListURL)]);
  /** @type {Object<string, string>} */
  const missingImports = {};
  for (const [name, imports] of Object.entries(offline.unavailable)) {
    if (!(name in lock.packages)) continue;
    delete lock.packages[name];
    for (const imp of /** @type {string[]} */ (imports)) missingImports[imp] = name;
  }
  for (const pkg of Object.values(lock.packages)) {
    /** @type {any} */ (pkg).file_name = new URL(/** @type {any} */ (pkg).file_name, absoluteLock).href;
  }
  const blob = new Blob([JSON.stringify(lock)], { type: 'application/json' });
  return { lockFileURL: URL.createObjectURL(blob), missingImports };
}

// Last on sys.meta_path, so it only sees imports nothing else could satisfy. Without
// it, `import cv2` would say no more than "No module named 'cv2'".
const MISSING_HOOK = `
import sys
from importlib.abc import MetaPathFinder

class OfflineMissingFinder(MetaPathFinder):
    def __init__(self, missing):
        self.missing = missing

    def find_spec(self, fullname, path=None, target=None):
        package = self.missing.get(fullname) if path is None else None
        if package is None:
            return None
        raise ModuleNotFoundError(
            f"No module named {fullname!r}: it comes from the Pyodide package {package!r}, "
            "which is not available offline (set-up could not obtain a verified copy of its "
            "wheel; ortweb's README lists the offline packages). A site built with "
            "--assets cdn loads it from Pyodide's CDN.", name=fullname)

sys.meta_path.append(OfflineMissingFinder(dict(missing)))
`;

// Python 3.12's zipimporter reads its archive's whole listing again on every
// importlib.invalidate_caches(), which each loadPackage and micropip install calls:
// a quarter of a second for the standard library's zip right after a snapshot restore
// (CPython gh-103200, fixed in 3.13). That zip never changes in a page; other
// archives on sys.path are still read again.
const STDLIB_ZIP_LISTING = `
import json, zipimport

def _keep_stdlib_listing(reread, archive):
    def invalidate_caches(self):
        if self.archive != archive:
            reread(self)
    invalidate_caches.ortweb_keeps = archive
    return invalidate_caches

loader = json.__spec__.loader
if (isinstance(loader, zipimport.zipimporter)
        and not hasattr(zipimport.zipimporter.invalidate_caches, "ortweb_keeps")):
    zipimport.zipimporter.invalidate_caches = _keep_stdlib_listing(
        zipimport.zipimporter.invalidate_caches, loader.archive)
`;

/**
 * See STDLIB_ZIP_LISTING (a standard library that is not a zip is left as it is).
 * @param {any} pyodide
 */
function keepStdlibZipListing(pyodide) {
  const scope = pyodide.globals.get('dict')();
  try {
    pyodide.runPython(STDLIB_ZIP_LISTING, { globals: scope });
  } finally {
    scope.destroy();
  }
}

/** @param {any} pyodide @param {Object<string, string>} missing */
function installMissingHook(pyodide, missing) {
  const scope = pyodide.globals.get('dict')();
  const table = pyodide.toPy(missing);
  try {
    scope.set('missing', table);
    pyodide.runPython(MISSING_HOOK, { globals: scope });
  } finally {
    table.destroy();
    scope.destroy();
  }
}

// The snapshot froze the state of `random` (when it was imported): every page would
// draw the same numbers. Its LANG is the maker's (`C.UTF-8`): the visitor's, as
// Emscripten gives a fresh boot.
const AS_FRESH = `
import os, sys
if 'random' in sys.modules:
    sys.modules['random'].seed()
os.environ['LANG'] = LANG
`;

/** Python's `time` module as a fresh boot makes it, to take its time-zone values from. */
const FRESH_TIME_ZONE = `
import _imp, time
fresh = _imp.create_builtin(time.__spec__)
_imp.exec_builtin(fresh)
for name in ("timezone", "altzone", "daylight", "tzname"):
    setattr(time, name, getattr(fresh, name))
`;

/**
 * Give an interpreter restored from a memory snapshot what a fresh boot would have:
 * `random` seeded anew, the visitor's LANG, and the visitor's time zone. A snapshot
 * holds the time zone of the machine that made it: C's `tzname`, `timezone` and
 * `daylight`, set once per process, and `time.timezone`, `time.tzname` and the like,
 * set when `time` was imported (Pyodide's Python has no `time.tzset()`). Both are set
 * again, as Emscripten sets them at a fresh start.
 * @param {any} pyodide
 */
function asFreshBoot(pyodide) {
  const module = pyodide._module;
  if (typeof module?.__tzset_js === 'function' && typeof module._tzname === 'number') {
    const names = module._tzname >> 2;
    module.__tzset_js(module._timezone, module._daylight, module.HEAPU32[names],
      module.HEAPU32[names + 1]);
  }
  const lang = `${(globalThis.navigator?.languages?.[0] ?? 'C').replace('-', '_')}.UTF-8`;
  const scope = pyodide.globals.get('dict')();
  try {
    scope.set('LANG', lang);
    pyodide.runPython(AS_FRESH, { globals: scope });
    pyodide.runPython(FRESH_TIME_ZONE, { globals: scope });
  } finally {
    scope.destroy();
  }
}
