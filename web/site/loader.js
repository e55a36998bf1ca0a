// @ts-check
/**
 * Verified downloads of a site's files, in the page or in its Web Worker.
 *
 * Every file the site's config lists is downloaded through {@link createLoader}:
 * its progress goes to the caller's hooks (the page draws a row per file; the
 * worker posts the same events to the page), and a file whose size or sha256
 * differs from the manifest is refused by name. The model is kept in Cache
 * Storage by its sha256, so a second visit does not download it again.
 * `install()` routes the realm's `fetch` through the loader, so Pyodide's and
 * onnxruntime-web's own fetches of listed files are checked too.
 * @module loader
 */
import { sha256Hex } from './sha256.js';

/**
 * @typedef {object} Asset
 * @property {string} url     relative to the page, or absolute (CDN)
 * @property {number} size    bytes
 * @property {string} sha256  lowercase hex
 * @property {string} [label] what the progress list calls it
 * @property {string} [name]  file name in Python's working directory
 * @property {string} [at]    where the site keeps it, when not at `url`: a hash-keyed
 *   path (`hashed/…`, see site_hashed.py) that hosts may cache for good
 * @property {Record<string, number>} [encoded]  sizes of its precompressed copies, by
 *   Content-Encoding (`br`, `gzip`)
 */

/**
 * @typedef {object} Progress one file's row in the page's download list
 * @property {(loaded: number) => void} update
 * @property {(state: 'done'|'cached'|'error') => void} finish
 */

/**
 * @typedef {object} LoaderHooks
 * @property {(url: string, label: string, total: number) => Progress} row
 *   the row of `url` (created on first use)
 * @property {(err: any) => void} fail  a download failed: fail the page loudly
 */

export class IntegrityError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'IntegrityError';
  }
}

/** @param {string} url */
function contentType(url) {
  const path = new URL(url).pathname;
  if (path.endsWith('.wasm')) return 'application/wasm';
  if (path.endsWith('.json')) return 'application/json';
  if (path.endsWith('.mjs') || path.endsWith('.js')) return 'text/javascript';
  if (path.endsWith('.py')) return 'text/x-python; charset=utf-8';
  return 'application/octet-stream';
}

/**
 * The body of `response`, read chunk by chunk to move the progress bar.
 * @param {Response} response @param {Progress} progress @param {number} size
 */
async function readBody(response, progress, size) {
  if (!response.body) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    progress.update(bytes.length);
    return bytes;
  }
  const reader = response.body.getReader();
  // The manifest knows the size: one buffer, no concatenation of chunks.
  let buffer = new Uint8Array(size);
  let loaded = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    if (loaded + value.length > buffer.length) {
      const bigger = new Uint8Array(Math.max(buffer.length * 2, loaded + value.length));
      bigger.set(buffer.subarray(0, loaded));
      buffer = bigger;
    }
    buffer.set(value, loaded);
    loaded += value.length;
    progress.update(loaded);
  }
  return loaded === buffer.length ? buffer : buffer.slice(0, loaded);
}

/** @param {Asset} asset @param {Uint8Array} bytes */
async function verify(asset, bytes) {
  const got = bytes.length === asset.size ? await sha256Hex(bytes) : `(${bytes.length} bytes)`;
  if (got !== asset.sha256) {
    // A host that serves NAME.br for NAME but leaves out its Content-Encoding (a common
    // misconfiguration) hands over bytes the browser did not decode: the copy's size.
    // (Not gzip's magic number: some files, the snapshot among them, are gzip.)
    const sent = Object.entries(asset.encoded ?? {}).find(([, size]) => size === bytes.length)?.[0];
    if (sent) {
      throw new IntegrityError(
        `${asset.url}: the host sent its ${sent}-compressed copy without ` +
        `\`Content-Encoding: ${sent}\`, so the browser did not decode it. Have the host send ` +
        `that header with the site's .br/.gz files (see \`ortweb serve\`), or delete them.`,
      );
    }
    throw new IntegrityError(
      `${asset.url} does not match the site's manifest: expected ${asset.size} bytes with sha256 ` +
      `${asset.sha256}, got ${got}. The file was changed or damaged after \`ortweb site\` wrote it.`,
    );
  }
}

/**
 * The loader of one site.
 * @param {any} config the page's config (`#ortweb-config`)
 * @param {string} base the page's URL, which the config's URLs are relative to
 * @param {LoaderHooks} hooks
 * @param {{controlled?: boolean}} [options] `controlled`: the site's service worker
 *   serves the page (see ortweb-sw.js)
 */
export function createLoader(config, base, hooks, options = {}) {
  /** @param {string} url */
  const absolute = (url) => new URL(url, base).href;
  /** @type {Map<string, Asset>} absolute URL → asset, for everything fetched with fetch() */
  const assets = new Map();
  for (const asset of config.assets) assets.set(absolute(asset.url), asset);
  /** @type {Map<string, Asset>} absolute URL → JS module (with its sha256) */
  const modules = new Map();
  for (const mod of config.modules ?? []) modules.set(absolute(mod.url), mod);
  const modelURL = absolute(config.model.url);
  const nativeFetch = globalThis.fetch.bind(globalThis);
  /** Where the site keeps the file asked for as `url`. @param {string} url absolute @param {Asset} asset */
  const where = (url, asset) => (asset.at ? absolute(asset.at) : url);

  /**
   * The response for `asset`, checked: one the site's service worker took from its
   * cache (it stored the file only once its sha256 matched the manifest, and says so
   * in `X-Ortweb-Sha256`) is given as it is, so the browser can compile wasm from it
   * as a stream and keep the compiled code; anything else is read, shown in the
   * progress list and checked here.
   * @param {string} url absolute
   * @param {Asset} asset
   * @param {RequestInit} [init]
   * @param {boolean} [fatal] a failure fails the page (else only the caller hears of it)
   * @returns {Promise<{response: Response|null, bytes: Uint8Array|null}>}
   */
  async function open(url, asset, init, fatal = true) {
    const progress = hooks.row(url, asset.label ?? asset.url, asset.size);
    const integrity = init?.integrity;
    const attempt = async () => {
      const response = await nativeFetch(where(url, asset), integrity ? { integrity } : undefined);
      if (!response.ok) throw new Error(`cannot load ${asset.url}: HTTP ${response.status} ${response.statusText}`);
      if (response.headers.get('X-Ortweb-Sha256') === asset.sha256) return { response, bytes: null };
      return { response: null, bytes: await readBody(response, progress, asset.size) };
    };
    try {
      let got;
      try {
        got = await attempt();
      } catch (err) {
        // fetch() and a body's reader fail with a TypeError when the connection drops
        // (not for an HTTP error, which the server meant): once more, from the start.
        if (!(err instanceof TypeError)) throw err;
        progress.update(0);
        try {
          got = await attempt();
        } catch (again) {
          if (!(again instanceof TypeError)) throw again;
          throw new Error(`cannot download ${asset.url}: the connection failed twice ` +
            `(${again.message}); reload the page to try again`);
        }
      }
      if (got.bytes === null) {
        progress.finish('cached');
        return got;
      }
      await verify(asset, got.bytes);
      progress.finish('done');
      return got;
    } catch (err) {
      progress.finish('error');
      // Some loaders (Pyodide's wasm instantiation among them) only log a failed
      // fetch and then wait forever: fail the page here, loudly.
      if (fatal) hooks.fail(err);
      throw err;
    }
  }

  /** @type {Map<string, Promise<{response: Response|null, bytes: Uint8Array|null}>>} started early, taken once */
  const early = new Map();

  /**
   * `open`, or the download `prefetch` started for `url` (taken once).
   * @param {string} url absolute @param {Asset} asset @param {RequestInit} [init]
   * @param {boolean} [fatal] see `open`
   */
  function take(url, asset, init, fatal = true) {
    const started = early.get(url);
    if (started) {
      early.delete(url);
      return started;
    }
    return open(url, asset, init, fatal);
  }

  /**
   * Start downloading listed files now, so that they arrive while other work runs
   * (Pyodide's own fetches of them then find them here).
   * @param {string[]} urls relative to the page, or absolute
   */
  function prefetch(urls) {
    for (const url of urls) {
      const href = absolute(url);
      const asset = assets.get(href);
      if (!asset || href === modelURL || early.has(href)) continue;
      const started = open(href, asset);
      started.catch(() => {});
      early.set(href, started);
    }
  }

  /**
   * Download `asset` (or take it from the service worker's cache): its checked bytes.
   * @param {string} url absolute @param {Asset} asset @param {RequestInit} [init]
   * @param {boolean} [fatal] see `open`
   */
  async function download(url, asset, init, fatal = true) {
    const { response, bytes } = await take(url, asset, init, fatal);
    return bytes ?? new Uint8Array(await /** @type {Response} */ (response).arrayBuffer());
  }

  // -- the model, kept in Cache Storage ---------------------------------------------

  /** @type {'network'|'cache'|null} */
  let modelSource = null;
  /** @type {Promise<Uint8Array>|null} */
  let modelPromise = null;

  /** @param {string} url @param {string} sha256 */
  function cacheKey(url, sha256) {
    const key = new URL(url);
    key.searchParams.set('ortweb-sha256', sha256);
    return key.href;
  }

  /** @returns {Promise<Cache|null>} */
  async function openCache() {
    // Under the site's service worker the model is in its cache, with every file, unless
    // it is over the worker's limit (ortweb-sw.js STORE_LIMIT, the same 256 MiB).
    if (options.controlled && config.model.size <= 256 * 1024 * 1024) return null;
    try {
      // Named per site: sites on one origin do not share entries.
      return globalThis.caches ? await caches.open(`${config.cacheName} ${new URL('.', base).href}`) : null;
    } catch {
      // No Cache Storage (insecure context, private mode): download every time.
      return null;
    }
  }

  /** The model's bytes: from Cache Storage when this very file is there, else downloaded and stored. */
  function modelBytes() {
    if (!modelPromise) {
      modelPromise = (async () => {
        const asset = config.model;
        const key = cacheKey(modelURL, asset.sha256);
        const cache = await openCache();
        if (cache) {
          const hit = await cache.match(key);
          if (hit) {
            const bytes = new Uint8Array(await hit.arrayBuffer());
            if (bytes.length === asset.size && await sha256Hex(bytes) === asset.sha256) {
              modelSource = 'cache';
              hooks.row(modelURL, asset.label ?? asset.url, asset.size).finish('cached');
              return bytes;
            }
            await cache.delete(key);
          }
        }
        const { response, bytes: fetched } = await open(modelURL, asset);
        modelSource = response ? 'cache' : 'network';
        const bytes = fetched ?? new Uint8Array(await /** @type {Response} */ (response).arrayBuffer());
        if (cache) {
          // Older versions of this model would only take up the visitor's disk.
          for (const request of await cache.keys()) {
            const old = new URL(request.url);
            old.searchParams.delete('ortweb-sha256');
            if (old.href === modelURL) await cache.delete(request);
          }
          try {
            await cache.put(key, new Response(/** @type {Uint8Array<ArrayBuffer>} */ (bytes),
              { headers: { 'Content-Type': 'application/octet-stream' } }));
          } catch (err) {
            console.warn('ortweb: could not cache the model', err);
          }
        }
        return bytes;
      })();
      modelPromise.catch(() => { modelPromise = null; });
    }
    return modelPromise;
  }

  /**
   * The checked bytes of a listed file.
   * @param {string} url relative to the page, or absolute
   */
  function bytesOf(url) {
    const href = absolute(url);
    if (href === modelURL) return modelBytes();
    const asset = assets.get(href);
    if (!asset) throw new Error(`ortweb: ${url} is not an asset of this site`);
    return download(href, asset);
  }

  /**
   * Whether the site's service worker holds the checked bytes of the listed file `url`
   * already (it stores every file once a first visit is ready), so that reading it
   * costs no download: the files only later visits use (the build's snapshot, the
   * packages' bytecode) are read then. Its cache and keys are ortweb-sw.js's.
   * @param {string} url relative to the page, or absolute
   * @returns {Promise<boolean>}
   */
  async function stored(url) {
    const href = absolute(url);
    const asset = assets.get(href);
    if (!asset || !options.controlled || !globalThis.caches) return false;
    try {
      const cache = await caches.open(`ortweb-site ${new URL('.', base).href}`);
      return Boolean(await cache.match(cacheKey(where(href, asset), asset.sha256)));
    } catch {
      return false;
    }
  }

  /**
   * `fetch` for the whole realm: listed files go through the verified download
   * (the model through the cache); everything else is untouched.
   * @param {RequestInfo | URL} input
   * @param {RequestInit} [init]
   */
  async function ortwebFetch(input, init) {
    const url = absolute(input instanceof Request ? input.url : String(input));
    const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
    if (method !== 'GET' || !assets.has(url)) return nativeFetch(input, init);
    if (url === modelURL) {
      const model = /** @type {Uint8Array<ArrayBuffer>} */ (await modelBytes());
      return new Response(model, { status: 200, headers: { 'Content-Type': contentType(url) } });
    }
    const { response, bytes } = await take(url, /** @type {Asset} */ (assets.get(url)), init);
    return response ?? new Response(/** @type {Uint8Array<ArrayBuffer>} */ (bytes),
      { status: 200, headers: { 'Content-Type': contentType(url) } });
  }

  /**
   * Check JS modules against the manifest before the realm imports them: in a Web
   * Worker the import map's `integrity` does not apply. The browser then takes the
   * module from its HTTP cache (or the site's service worker), which now holds the
   * checked bytes.
   * @param {string[]} urls relative to the page, or absolute
   * @param {boolean} [fatal] a module that fails its check fails the page (false: an
   *   engine's code, whose import only fails that engine's attempt)
   */
  async function checkModules(urls, fatal = true) {
    await Promise.all(urls.map(async (url) => {
      const href = absolute(url);
      const mod = modules.get(href);
      if (!mod) throw new Error(`ortweb: ${url} is not a module of this site`);
      if (!mod.sha256) return;
      await download(href, mod, undefined, fatal);
    }));
  }

  return {
    absolute,
    bytesOf,
    checkModules,
    prefetch,
    stored,
    /** @param {string} url absolute */
    module: (url) => modules.get(url.split('#')[0]),
    get modelSource() { return modelSource; },
    /** Route this realm's `fetch` through the loader. */
    install() {
      globalThis.fetch = ortwebFetch;
    },
  };
}

/** @typedef {ReturnType<typeof createLoader>} Loader */
