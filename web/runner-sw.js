// @ts-check
/* runner-sw.js: the asset cache of runner pages in a browser elsewhere.
 *
 * A browser elsewhere gets every file through Playwright's request routing, relayed
 * by the host (py/ortweb/host/browser/route.py), and Playwright turns the HTTP cache
 * off while it routes. So each runner page would fetch Pyodide, numpy and ORT-web's
 * wasm again through the relay. This worker, registered by runner.js when the host
 * asks (`?assetCache=sw`), keeps those files in Cache Storage keyed by their sha256,
 * for every later page of the same browser context:
 *  - for a file under /pyodide/, /ort/ or /snapshot/ it asks the host for the file's sha256
 *    (`/__ortweb/digest?path=…`, answered by the relay, never by the browser);
 *  - a stored copy under that sha256 is served as is (nothing relayed);
 *  - else the file is fetched (relayed), and stored only when its bytes match; one the
 *    digest marks `gzip` (WebAssembly, JavaScript) is asked for with `?ortweb-relay=gzip`
 *    and comes gzipped, a third of its size through the relay, and is decoded here
 *    (a body Playwright hands over reaches the page as given, whatever its headers).
 * A file the host has no digest for, and every other request, is left alone: it
 * goes through the routing as without this worker (listed, refused when it leaves
 * the local server).
 */
'use strict';

const sw = /** @type {any} */ (self);
const CACHE = 'ortweb-runner-assets';
const SCOPE = new URL(sw.registration.scope);
const DIGEST = new URL('__ortweb/digest', SCOPE).href;
const KEPT = /^\/(pyodide|ort|snapshot)\//;
/** The relay's gzipped answer: asked with this query, said by this header (route.py). */
const GZIP_QUERY = 'ortweb-relay=gzip';
const GZIP_HEADER = 'X-Ortweb-Relay-Encoding';

/** @param {ArrayBuffer} bytes */
async function sha256Hex(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
}

/**
 * `request` from Cache Storage by its sha256, else relayed (and stored when it matches).
 * @param {Request} request
 * @param {URL} url
 */
async function serve(request, url) {
  const asked = await fetch(`${DIGEST}?path=${encodeURIComponent(url.pathname)}`, { cache: 'no-store' });
  if (!asked.ok) return fetch(request);
  const { sha256, size, gzip } = await asked.json();
  const key = `${url.origin}${url.pathname}?ortweb-sha256=${sha256}`;
  const cache = await caches.open(CACHE);
  const hit = await cache.match(key);
  if (hit) return hit;
  const packed = gzip && typeof DecompressionStream === 'function';
  const response = await fetch(packed ? `${url.pathname}?${GZIP_QUERY}` : request,
    packed ? { cache: 'no-store' } : undefined);
  if (response.status !== 200) return packed ? fetch(request) : response;
  const headers = new Headers(response.headers);
  const gzipped = headers.get(GZIP_HEADER) === 'gzip';
  headers.delete(GZIP_HEADER);
  const body = gzipped && response.body
    ? new Response(response.body.pipeThrough(new DecompressionStream('gzip'))) : response;
  const bytes = await body.arrayBuffer();
  const init = { status: response.status, statusText: response.statusText, headers };
  // A file that changed since the host hashed it is served unstored; the page's own
  // checks (Pyodide's sha256 of each package) speak for it.
  if (bytes.byteLength === size && await sha256Hex(bytes) === sha256) {
    await cache.put(key, new Response(bytes, init));
  }
  return new Response(bytes, init);
}

sw.addEventListener('install', () => sw.skipWaiting());
sw.addEventListener('activate', (/** @type {any} */ event) => event.waitUntil(sw.clients.claim()));

sw.addEventListener('fetch', (/** @type {any} */ event) => {
  const request = /** @type {Request} */ (event.request);
  if (request.method !== 'GET' || request.headers.has('range')) return;
  const url = new URL(request.url);
  if (url.origin !== SCOPE.origin || url.search || !KEPT.test(url.pathname)) return;
  event.respondWith(serve(request, url));
});
