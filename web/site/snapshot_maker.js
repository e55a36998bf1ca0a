// @ts-check
/**
 * A short-lived module worker that makes the memory snapshot of a bare Pyodide
 * interpreter and stores it in Cache Storage (see snapshot.js). It is started only
 * under the site's service worker, which serves Pyodide's files from its cache after
 * checking them against the manifest (`snapshot.js`, which it imports, was checked by
 * the page before the site's own worker imported it). Answers `{stored: true, bytes, ms}` or
 * `{stored: false, error}`.
 * @module snapshot_maker
 */

import { keepOnly } from './snapshot.js';

/** @type {any} */
const scope = globalThis;

scope.onmessage = async (/** @type {MessageEvent} */ event) => {
  const { place, indexURL, lockURL } = event.data;
  const start = performance.now();
  try {
    const { loadPyodide } = await import(indexURL + 'pyodide.mjs');
    const pyodide = await loadPyodide({
      indexURL,
      lockFileURL: lockURL,
      packageCacheDir: indexURL,
      stdout: () => {},
      stderr: () => {},
      _makeSnapshot: true,
    });
    const bytes = pyodide.makeMemorySnapshot();
    // One snapshot per site: an older build's would only take up the visitor's disk.
    await keepOnly(place, bytes);
    scope.postMessage({ stored: true, bytes: bytes.length, ms: performance.now() - start });
  } catch (err) {
    scope.postMessage({ stored: false, error: String(/** @type {any} */ (err)?.stack ?? err) });
  }
};
