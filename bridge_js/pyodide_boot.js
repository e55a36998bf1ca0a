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
 * @property {(line: string) => void} [stdout]
 * @property {(line: string) => void} [stderr]
 * @property {(msg: string) => void} [progress] messages about what is loading
 */

/**
 * Load Pyodide and the packages; resolves to the Pyodide API object.
 * @param {BootOptions} options
 */
export async function bootPyodide(options) {
  const indexURL = new URL(options.indexURL, globalThis.location?.href).href;
  const lockFileURL = options.lockFileURL ?? indexURL + 'pyodide-lock.json';
  const packages = options.packages ?? ['numpy', 'ortweb'];
  const progress = options.progress ?? (() => {});
  progress('loading Pyodide');
  const { loadPyodide } = await import(indexURL + 'pyodide.mjs');
  const pyodide = await loadPyodide({
    indexURL,
    lockFileURL,
    stdout: options.stdout,
    stderr: options.stderr,
    // Nothing may come from a CDN: packages are only taken from indexURL.
    packageCacheDir: indexURL,
  });
  /** @type {string[]} */
  const problems = [];
  progress(`loading ${packages.join(', ')}`);
  await pyodide.loadPackage(packages, {
    messageCallback: () => {},
    errorCallback: (/** @type {string} */ msg) => problems.push(msg),
    checkIntegrity: true,
  });
  const missing = packages.filter((p) => !(p in pyodide.loadedPackages));
  if (missing.length || problems.length) {
    throw new Error(`Pyodide packages failed to load: ${missing.join(', ') || '(none missing)'}; ${problems.join(' | ')}`);
  }
  return pyodide;
}
