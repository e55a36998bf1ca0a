/* ortweb-sw.js: the service worker of a site made by `ortweb site` (and, run as a
 * page script, its registration).
 *
 * As a service worker it does two jobs:
 *  1. cross-origin isolation on hosts that cannot send headers: every response it
 *     gives carries COOP/COEP (what coi-serviceworker did before it);
 *  2. an instant, offline second visit: every file of the site's manifest
 *     (ortweb-manifest.json) is served from Cache Storage, keyed by its sha256, and
 *     stored only once its bytes match the manifest. A navigation makes the one
 *     network request of a second visit, for the manifest (none when offline: the
 *     stored one is used); a rebuilt site has a new manifest, so its changed files
 *     are fetched and the old build's entries are removed. The cache is named after
 *     the worker's scope: two sites on one origin never share entries. A file kept
 *     under a hash-keyed path (`hashed/…`) is also served by the name the page knows
 *     it by (its manifest entry's `name`).
 * After the page is ready it asks for the rest of the manifest (`precache`), so that
 * files the first visit did not need are there for an offline one.
 *
 * As a page script (a classic <script> before boot.js) it registers itself and, on a
 * host without the headers, reloads the page once when it takes control.
 */
'use strict';

if (typeof window === 'undefined') {
  const sw = /** @type {any} */ (self);
  const SCOPE = sw.registration.scope;
  const CACHE = `ortweb-site ${SCOPE}`;
  const MANIFEST = new URL('ortweb-manifest.json', SCOPE).href;
  const MANIFEST_KEY = new URL('ortweb-manifest.json?ortweb-stored', SCOPE).href;

  /** @type {any} */
  let manifest = null;
  /**
   * Files over this size pass through unstored: checking one takes it whole into this
   * worker's memory, and Chromium refuses a stored body of some hundreds of MB made
   * from one buffer. The page keeps such a model in a cache of its own (loader.js,
   * the same limit).
   */
  const STORE_LIMIT = 256 * 1024 * 1024;

  /** @param {string} path @param {string} sha256 */
  const keyOf = (path, sha256) => `${new URL(path, SCOPE).href}?ortweb-sha256=${sha256}`;

  /** @param {ArrayBuffer} bytes */
  async function sha256Hex(bytes) {
    const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('');
  }

  /** Headers that make a document or worker cross-origin isolated. @param {Headers} headers */
  function isolate(headers) {
    headers.set('Cross-Origin-Embedder-Policy', 'require-corp');
    headers.set('Cross-Origin-Opener-Policy', 'same-origin');
    headers.set('Cross-Origin-Resource-Policy', 'cross-origin');
    return headers;
  }

  /** @param {Response} response */
  function isolated(response) {
    if (response.status === 0) return response; // opaque: headers cannot be added
    return new Response(response.body, {
      status: response.status, statusText: response.statusText, headers: isolate(new Headers(response.headers)),
    });
  }

  /** The manifest this worker serves by: in memory, else the one stored. */
  async function current() {
    if (!manifest) {
      const stored = await (await caches.open(CACHE)).match(MANIFEST_KEY);
      if (stored) manifest = await stored.json();
    }
    return manifest;
  }

  /** @type {Promise<any>|null} */
  let fetching = null;
  /**
   * The manifest, fetched once when none is known: the first visit's page was not
   * served by this worker, whose files must still be stored as they stream in.
   */
  async function known() {
    const site = await current();
    if (site) return site;
    fetching ??= refresh().finally(() => { fetching = null; });
    return fetching;
  }

  /**
   * The site's manifest from the network (a navigation's one request); offline or on
   * any failure, the stored one. A new manifest drops the old build's entries.
   */
  async function refresh() {
    // Offline: no request at all, the stored manifest.
    if (sw.navigator?.onLine === false) return current();
    let text;
    try {
      const response = await fetch(MANIFEST, { cache: 'no-store' });
      if (!response.ok) return current();
      text = await response.text();
    } catch {
      return current();
    }
    const fresh = JSON.parse(text);
    const cache = await caches.open(CACHE);
    const before = await current();
    manifest = fresh;
    if (!before || JSON.stringify(before.files) !== JSON.stringify(fresh.files)) {
      await cache.put(MANIFEST_KEY, new Response(text, { headers: { 'Content-Type': 'application/json' } }));
      const keep = new Set(Object.entries(fresh.files).map(([path, f]) => keyOf(path, /** @type {any} */ (f).sha256)));
      keep.add(MANIFEST_KEY);
      for (const request of await cache.keys()) {
        if (!keep.has(request.url)) await cache.delete(request);
      }
    }
    return fresh;
  }

  /**
   * Store `bytes` as `path`'s entry when they match the manifest; the entry's key, or
   * null for a changed file (not stored: the page's own check names it).
   * @param {string} path @param {any} entry @param {ArrayBuffer} bytes @param {Headers} headers
   */
  async function store(path, entry, bytes, headers) {
    if (bytes.byteLength !== entry.size || await sha256Hex(bytes) !== entry.sha256) return null;
    const stored = new Headers(headers);
    stored.set('X-Ortweb-Sha256', entry.sha256);
    stored.set('Content-Length', String(bytes.byteLength));
    stored.delete('Content-Encoding');
    const key = keyOf(path, entry.sha256);
    await (await caches.open(CACHE)).put(key, new Response(bytes, { headers: stored }));
    return key;
  }

  /**
   * Files on their way into the cache, by key: a request for one of them waits for it
   * to be stored instead of downloading it a second time (a prefetch and the page's
   * own request for the same file, say).
   * @type {Map<string, Promise<void>>}
   */
  const inflight = new Map();

  /** `done` is storing `key` until it settles. @param {string} key @param {Promise<any>} done */
  function track(key, done) {
    const settled = done.then(() => {}, () => {});
    inflight.set(key, settled);
    settled.then(() => { if (inflight.get(key) === settled) inflight.delete(key); });
    return settled;
  }

  /**
   * Fetch `path` from the network and store it when its bytes match the manifest.
   *
   * A file's response streams to the page at once and the check runs on a copy,
   * except WebAssembly (`.wasm`): that is stored first and given from Cache Storage.
   * Chromium keeps a module's optimised code beside the stored response it was
   * compiled from, and only for a response that came from a cache: served straight
   * from the network, `pyodide.asm.wasm` would be compiled cold on the first and
   * second visit alike, and a restored interpreter runs slowly until its hot
   * functions are optimised again (README, *Compiled wasm is kept*). The page checks
   * such a file itself anyway before compiling it, so it waited for all of it already.
   * @param {string} path @param {any} entry @param {RequestInfo} request
   * @param {(p: Promise<any>) => void} [waitUntil]
   * @param {() => void} [received] called once the network has given all the bytes
   *   (or failed), before they are checked and stored
   */
  async function fetchAndStore(path, entry, request, waitUntil, received = () => {}) {
    /** @type {(value?: any) => void} */
    let settle = () => {};
    track(keyOf(path, entry.sha256), new Promise((resolve) => { settle = resolve; }));
    const response = await fetch(request).catch((err) => { settle(); received(); throw err; });
    if (!response.ok || response.status === 0 || !response.body) {
      settle();
      received();
      return isolated(response);
    }
    const headers = isolate(new Headers(response.headers));
    const init = { status: response.status, statusText: response.statusText, headers };
    if (path.endsWith('.wasm')) {
      const bytes = await response.arrayBuffer().catch((err) => { settle(); throw err; })
        .finally(received);
      const key = await store(path, entry, bytes, headers).catch(() => null);
      settle();
      const hit = key ? await (await caches.open(CACHE)).match(key) : undefined;
      return hit ?? new Response(bytes, init);
    }
    const [forPage, forCache] = response.body.tee();
    const stored = new Response(forCache).arrayBuffer().finally(received)
      .then((bytes) => store(path, entry, bytes, headers)).catch(() => {}).finally(settle);
    waitUntil?.(stored);
    return new Response(forPage, init);
  }

  /** @type {WeakMap<object, Map<string, string>>} per manifest: a file's name → its path */
  const renamed = new WeakMap();

  /**
   * The manifest's path and entry of the file `path` names: a file kept under a
   * hash-keyed path (`hashed/…`) is also served by the name the page knows it by (its
   * `name`), for the code that asks without the site's loader (snapshot_maker.js).
   * @param {any} site @param {string} path
   * @returns {[string, any]|null}
   */
  function fileOf(site, path) {
    const files = site?.files;
    if (!files) return null;
    if (files[path]) return [path, files[path]];
    let names = renamed.get(files);
    if (!names) {
      names = new Map(Object.entries(files).filter(([, e]) => /** @type {any} */ (e).name)
        .map(([at, e]) => [/** @type {any} */ (e).name, at]));
      renamed.set(files, names);
    }
    const at = names.get(path);
    return at ? [at, files[at]] : null;
  }

  /**
   * A file of the site: from the cache by its sha256, else from the network.
   * @param {string} asked @param {Request} request @param {any} site @param {(p: Promise<any>) => void} waitUntil
   */
  async function serve(asked, request, site, waitUntil) {
    const file = fileOf(site, asked);
    if (!file || file[1].size > STORE_LIMIT) {
      return isolated(await fetch(file ? new URL(file[0], SCOPE).href : request));
    }
    const [path, entry] = file;
    const cache = await caches.open(CACHE);
    const key = keyOf(path, entry.sha256);
    // Queued by the prefetch: downloaded in its turn, so that it does not take the
    // link from the files the visit needs before it.
    await queued.get(key)?.promise;
    let hit = await cache.match(key);
    // On its way (a prefetch, another request): wait for it rather than download it
    // twice. Checked again after each await, and fetchAndStore claims the key at once.
    while (!hit && inflight.has(key)) {
      await inflight.get(key);
      hit = await cache.match(key);
    }
    // Straight from Cache Storage: the browser may keep compiled wasm beside it.
    if (hit) return hit;
    return fetchAndStore(path, entry, path === asked ? request : new URL(path, SCOPE).href, waitUntil);
  }

  /** Files of the first visit this size or larger are prefetched. */
  const PREFETCH_MIN = 64 * 1024;
  /**
   * Prefetches at a time: HTTP/1.1 gives a host six connections, and the page's and
   * its worker's modules need the others meanwhile.
   */
  const PREFETCH_LANES = 3;

  /**
   * Files the prefetch will download and has not started yet, by key: a request for
   * one waits for its turn (`serve`).
   * @type {Map<string, {promise: Promise<void>, resolve: () => void}>}
   */
  const queued = new Map();

  /** Take `keys` into the queue. @param {string[]} keys */
  function enqueue(keys) {
    for (const key of keys) {
      if (queued.has(key)) continue;
      /** @type {() => void} */
      let resolve = () => {};
      /** @type {Promise<void>} */
      const promise = new Promise((r) => { resolve = () => r(); });
      queued.set(key, { promise, resolve });
    }
  }

  /** `key`'s turn has come (or will not): requests for it go on. @param {string} key */
  function dequeue(key) {
    queued.get(key)?.resolve();
    queued.delete(key);
  }

  /**
   * Fetch and store each of `files` that is neither stored nor on its way, `lanes` at a
   * time (fetchAndStore); resolves once each one's bytes have arrived, the stores
   * still settling in `pending`. A failed file is left for the next visit.
   * @param {[string, any][]} files @param {number} lanes @param {Promise<any>[]} pending
   */
  async function download(files, lanes, pending) {
    const cache = await caches.open(CACHE);
    const todo = [...files];
    await Promise.all(Array.from({ length: lanes }, async () => {
      for (let next = todo.shift(); next; next = todo.shift()) {
        const [path, entry] = next;
        const key = keyOf(path, entry.sha256);
        try {
          if (inflight.has(key) || await cache.match(key) || inflight.has(key)) continue;
          /** @type {() => void} */
          let arrived = () => {};
          const got = new Promise((resolve) => { arrived = () => resolve(undefined); });
          const response = fetchAndStore(path, entry, new URL(path, SCOPE).href,
            (p) => pending.push(p), arrived);
          // Nobody reads this copy: the stored one serves the page.
          pending.push(response.then((r) => r.body?.cancel()).catch(() => {}));
          // The next file starts once this one's bytes are in, not once they are stored.
          await got;
        } catch {
          // Offline or a failed file: the next visit tries again.
        } finally {
          // Its turn has come: a request waiting for it finds it stored or on its way
          // (fetchAndStore claims the key before its first await).
          dequeue(key);
        }
      }
    }));
  }

  /**
   * Fetch and store each of `files` that is neither stored nor on its way, `lanes` at a
   * time; resolves once every store settled.
   * @param {[string, any][]} files @param {number} lanes
   */
  async function storeFiles(files, lanes) {
    /** @type {Promise<any>[]} */
    const pending = [];
    await download(files, lanes, pending);
    await Promise.all(pending);
  }

  /**
   * When a first visit needs the file kept at `path` (its manifest `entry`), lowest
   * first: Pyodide's core (the interpreter boots before anything else runs), then its
   * packages, then the engine, then the app's files (the model: its session is made
   * last).
   * @param {string} path @param {any} entry
   */
  function needed(path, entry) {
    const name = entry.name ?? path;
    if (/^pyodide\/(pyodide\.asm\.|python_stdlib\.zip$)/.test(name)) return 0;
    if (name.startsWith('pyodide/')) return 1;
    if (name.startsWith('ort/') || name.startsWith('ortweb/engines/')) return 2;
    return 3;
  }

  /**
   * The first visit's large files (the manifest's `first_visit`), fetched and stored
   * now, in the order the visit needs them (`needed`; largest first among equals): the
   * page asks (`prefetch`) as soon as this worker controls it, while its modules still
   * load, so that the link is busy from then on rather than from when the loader asks
   * for each file. Pyodide's core comes alone, then the rest a few at a time: the
   * link's bandwidth is shared by what downloads together, and the interpreter's boot,
   * the longest step of the visit, waits for the core only; the rest arrives while it
   * boots, more streams filling a slow link better than one. The loader's own request
   * for a file still to come waits for its turn (`queued`). A file whose bytes do not
   * match is not stored (the loader's own request fetches it again and names it).
   */
  async function prefetch() {
    const site = await known();
    if (!site) return;
    /** @type {[string, any][]} */
    const large = Object.entries(site.files).filter(([, entry]) => /** @type {any} */ (entry).first_visit
      && entry.size >= PREFETCH_MIN && entry.size <= STORE_LIMIT);
    const wire = (/** @type {any} */ entry) => entry.encodings?.br ?? entry.size;
    large.sort(([pa, a], [pb, b]) => needed(pa, a) - needed(pb, b) || wire(b) - wire(a));
    const keys = large.map(([path, entry]) => keyOf(path, entry.sha256));
    enqueue(keys);
    /** @type {Promise<any>[]} */
    const pending = [];
    try {
      await download(large.filter(([path, entry]) => needed(path, entry) === 0), PREFETCH_LANES, pending);
      await download(large.filter(([path, entry]) => needed(path, entry) > 0), PREFETCH_LANES, pending);
    } finally {
      keys.forEach(dequeue);
    }
    await Promise.all(pending);
  }

  /** Every file of the manifest not stored yet, a few at a time. */
  async function precache() {
    // The first visit's page was not served by this worker: no manifest stored yet.
    const site = await known();
    if (!site) return { stored: 0, total: 0 };
    const cache = await caches.open(CACHE);
    /** @type {[string, any][]} */
    const storable = Object.entries(site.files).filter(([, entry]) => /** @type {any} */ (entry).size <= STORE_LIMIT);
    await storeFiles(storable, 4);
    let stored = 0;
    for (const [path, entry] of storable) {
      if (await cache.match(keyOf(path, /** @type {any} */ (entry).sha256))) stored += 1;
    }
    return { stored, total: storable.length, unstored: Object.keys(site.files).length - storable.length };
  }

  sw.addEventListener('install', () => sw.skipWaiting());
  sw.addEventListener('activate', (/** @type {any} */ event) => event.waitUntil(sw.clients.claim()));

  sw.addEventListener('message', (/** @type {any} */ event) => {
    if (event.data?.type === 'prefetch') {
      event.waitUntil(prefetch().catch(() => {}));
      return;
    }
    if (event.data?.type !== 'precache') return;
    const done = precache().then(
      (result) => event.source?.postMessage({ type: 'precached', ...result }),
      (err) => event.source?.postMessage({ type: 'precached', error: String(err) }));
    event.waitUntil(done);
  });

  sw.addEventListener('fetch', (/** @type {any} */ event) => {
    const request = event.request;
    if (request.method !== 'GET') return;
    if (request.cache === 'only-if-cached' && request.mode !== 'same-origin') return;
    const url = new URL(request.url);
    if (!url.href.startsWith(SCOPE)) {
      // Another origin (a CDN): passed through, isolated.
      event.respondWith(fetch(request).then(isolated));
      return;
    }
    let path = decodeURIComponent(url.pathname.slice(new URL(SCOPE).pathname.length));
    if (path === '' || path.endsWith('/')) path += 'index.html';
    const waitUntil = (/** @type {Promise<any>} */ p) => event.waitUntil(p);
    if (request.mode === 'navigate') {
      event.respondWith(refresh().then((site) => serve(path, request, site, waitUntil)));
    } else if (url.search) {
      event.respondWith(fetch(request).then(isolated));
    } else {
      event.respondWith(known().then((site) => serve(path, request, site, waitUntil)));
    }
  });
} else {
  (() => {
    const container = navigator.serviceWorker;
    // Service workers need a secure context (https, localhost); elsewhere the page
    // runs as it can (without threads when the host sends no headers).
    if (!container || !window.isSecureContext) return;
    const script = /** @type {HTMLScriptElement} */ (document.currentScript).src;
    const reloaded = 'ortweb-sw-reloaded';
    if (!window.crossOriginIsolated && !sessionStorage.getItem(reloaded)) {
      // No headers from the host: once this worker controls the page, a reload
      // gets the isolated page it serves (once: a failure must not loop).
      container.addEventListener('controllerchange', () => {
        sessionStorage.setItem(reloaded, '1');
        location.reload();
      });
    } else if (window.crossOriginIsolated) {
      sessionStorage.removeItem(reloaded);
    }
    // Registering again would only add a request for this script: the browser checks
    // it for updates on navigations anyway.
    if (container.controller && new URL(container.controller.scriptURL).pathname === new URL(script).pathname) return;
    // 'all': a host's HTTP caching of this script spares the browser's update checks.
    container.register(script, { updateViaCache: 'all' }).then((registration) => {
      if (!window.crossOriginIsolated && registration.active && !container.controller
          && !sessionStorage.getItem(reloaded)) {
        sessionStorage.setItem(reloaded, '1');
        location.reload();
      }
    }, (err) => console.warn('ortweb: the service worker could not be registered', err));
  })();
}
