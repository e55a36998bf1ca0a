// @ts-check
/**
 * A short-lived module worker that makes the memory snapshot of a bare Pyodide
 * interpreter and stores it in Cache Storage (see snapshot.js). It is started only
 * under the site's service worker, which serves Pyodide's files from its cache after
 * checking them against the manifest. Answers `{stored: true, bytes, ms}` or
 * `{stored: false, error}`.
 * @module snapshot_maker
 */

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
    const cache = await caches.open(place.cacheName);
    // One snapshot per site: an older build's would only take up the visitor's disk.
    for (const request of await cache.keys()) {
      if (request.url !== place.key) await cache.delete(request);
    }
    await cache.put(place.key, new Response(bytes, { headers: { 'Content-Type': 'application/octet-stream' } }));
    scope.postMessage({ stored: true, bytes: bytes.length, ms: performance.now() - start });
  } catch (err) {
    scope.postMessage({ stored: false, error: String(/** @type {any} */ (err)?.stack ?? err) });
  }
};
