// @ts-check
/**
 * The bootstrap of a static site made by `ortweb site`.
 *
 * Reads the JSON config that `index.html` carries (`#ortweb-config`), then:
 *  1. routes every fetch of a listed asset through a verifying download that
 *     shows bytes and a progress bar per asset and refuses a file whose size
 *     or sha256 differs from the manifest (JS modules are covered by the
 *     import map's `integrity`, wheels also by Pyodide's own lock check);
 *  2. keeps the model in Cache Storage, keyed by its sha256, so a second visit
 *     does not download it again;
 *  3. boots Pyodide with numpy and ortweb, installs the site's wheels (`--wheel`,
 *     verified like every file) with micropip and no package index, writes the
 *     model, the script and its files into the working directory, and runs the
 *     script (top-level await);
 *  4. shows Python's output in the on-page console and any error with its
 *     Python traceback, and publishes `window.ortweb`, through which page JS
 *     calls the Python functions the script defined.
 * Python's output is also mirrored to the browser console with the tag the
 * host tools recognise, so headless checks can read it.
 * @module boot
 */
import { printTagged } from './bridge/console_tag.js';
import { installBridge } from './bridge/index.js';
import { bootPyodide } from './bridge/pyodide_boot.js';
import { sha256Hex } from './sha256.js';

/**
 * @typedef {object} Asset
 * @property {string} url     relative to the page, or absolute (CDN)
 * @property {number} size    bytes
 * @property {string} sha256  lowercase hex
 * @property {string} [label] what the progress list calls it
 * @property {string} [name]  file name in Python's working directory
 */

const configElement = document.getElementById('ortweb-config');
if (!configElement) throw new Error('ortweb: this page has no #ortweb-config (the template must include {{ head }})');
/** @type {any} */
const config = JSON.parse(configElement.textContent ?? '{}');

/** @param {string} url */
const absolute = (url) => new URL(url, document.baseURI).href;

/** @type {Object<string, number>} */
const timings = {};
/** @param {string} name */
function mark(name) {
  timings[name] = performance.now();
  performance.mark?.(`ortweb:${name}`);
  return timings[name];
}

// -- the page's parts -------------------------------------------------------------

/**
 * The element with `id`, created (in `#ortweb`, else the body) when the
 * template does not provide it.
 * @param {string} id
 * @param {string} tag
 * @returns {HTMLElement}
 */
function part(id, tag) {
  let el = document.getElementById(id);
  if (!el) {
    el = document.createElement(tag);
    el.id = id;
    (document.getElementById('ortweb') ?? document.body).append(el);
  }
  return el;
}

/** @param {number} n */
function formatBytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / (1024 * 1024)).toFixed(1)} MB`;
}

const ui = {
  /** @param {string} text */
  status(text) {
    const el = part('ortweb-status', 'p');
    el.textContent = text;
  },
  /** @param {string} stream @param {string} line */
  print(stream, line) {
    printTagged(stream, line);
    const out = part('ortweb-console', 'pre');
    const span = document.createElement('span');
    span.className = `ortweb-${stream}`;
    span.textContent = line + '\n';
    out.append(span);
    // A chatty script must not grow the page without bound.
    while (out.childNodes.length > 5000 && out.firstChild) out.firstChild.remove();
    out.scrollTop = out.scrollHeight;
  },
  /** @param {string} title @param {string} text */
  error(title, text) {
    const box = part('ortweb-error', 'div');
    box.replaceChildren();
    const strong = document.createElement('strong');
    strong.textContent = title;
    const pre = document.createElement('pre');
    pre.textContent = text;
    box.append(strong, pre);
    box.hidden = false;
    box.setAttribute('role', 'alert');
  },
};

/** One row of the progress list per asset, created when the asset is first asked for. */
class ProgressRow {
  /** @param {string} url @param {string} label @param {number} total */
  constructor(url, label, total) {
    this.total = total;
    this.loaded = 0;
    this.last = 0;
    this.li = document.createElement('li');
    this.li.className = 'ortweb-asset';
    this.li.dataset.url = url;
    this.li.dataset.state = 'loading';
    this.li.dataset.total = String(total);
    this.li.dataset.loaded = '0';
    const name = document.createElement('span');
    name.className = 'ortweb-asset-name';
    name.textContent = label;
    this.bar = document.createElement('progress');
    this.bar.max = Math.max(total, 1);
    this.bar.value = 0;
    this.bytes = document.createElement('span');
    this.bytes.className = 'ortweb-asset-bytes';
    this.li.append(name, this.bar, this.bytes);
    part('ortweb-progress', 'ul').append(this.li);
    this.show();
  }

  show() {
    this.li.dataset.loaded = String(this.loaded);
    this.bar.value = this.loaded;
    const state = this.li.dataset.state;
    const suffix = state === 'cached' ? ' (from cache)' : state === 'error' ? ' (failed)' : '';
    this.bytes.textContent = `${formatBytes(this.loaded)} / ${formatBytes(this.total)}${suffix}`;
    updateSummary();
  }

  /** @param {number} loaded */
  update(loaded) {
    this.loaded = loaded;
    const now = performance.now();
    // Repainting on every network chunk costs more than the download itself.
    if (now - this.last > 50) {
      this.last = now;
      this.show();
    }
  }

  /** @param {'done'|'cached'|'error'} state */
  finish(state) {
    this.li.dataset.state = state;
    if (state !== 'error') this.loaded = this.total;
    this.show();
  }
}

/** @type {Map<string, ProgressRow>} */
const rows = new Map();

function updateSummary() {
  let loaded = 0;
  let total = 0;
  for (const row of rows.values()) {
    loaded += row.loaded;
    total += row.total;
  }
  const el = part('ortweb-progress-summary', 'p');
  el.textContent = `${formatBytes(loaded)} of ${formatBytes(total)} in ${rows.size} files`;
}

/** @param {string} url @param {string} label @param {number} total */
function row(url, label, total) {
  let found = rows.get(url);
  if (!found) {
    found = new ProgressRow(url, label, total);
    rows.set(url, found);
  }
  return found;
}

// -- verified downloads -------------------------------------------------------------

/** @type {Map<string, Asset>} absolute URL → asset, for everything fetched with fetch() */
const assets = new Map();
for (const asset of config.assets) assets.set(absolute(asset.url), asset);
/** @type {Map<string, {label: string, size: number}>} absolute URL → JS module */
const modules = new Map();
for (const mod of config.modules ?? []) modules.set(absolute(mod.url), mod);

const nativeFetch = globalThis.fetch.bind(globalThis);

class IntegrityError extends Error {
  /** @param {string} message */
  constructor(message) {
    super(message);
    this.name = 'IntegrityError';
  }
}

/**
 * The body of `response`, read chunk by chunk to move the progress bar.
 * @param {Response} response @param {ProgressRow} progress @param {number} size
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
    throw new IntegrityError(
      `${asset.url} does not match the site's manifest: expected ${asset.size} bytes with sha256 ` +
      `${asset.sha256}, got ${got}. The file was changed or damaged after \`ortweb site\` wrote it.`,
    );
  }
}

/**
 * Download `asset`, showing progress, and check it against the manifest.
 * @param {string} url absolute
 * @param {Asset} asset
 * @param {RequestInit} [init]
 */
async function download(url, asset, init) {
  const progress = row(url, asset.label ?? asset.url, asset.size);
  try {
    const integrity = init?.integrity;
    const response = await nativeFetch(url, integrity ? { integrity } : undefined);
    if (!response.ok) throw new Error(`cannot load ${asset.url}: HTTP ${response.status} ${response.statusText}`);
    const bytes = await readBody(response, progress, asset.size);
    await verify(asset, bytes);
    progress.finish('done');
    return bytes;
  } catch (err) {
    progress.finish('error');
    // Some loaders (Pyodide's wasm instantiation among them) only log a failed
    // fetch and then wait forever: fail the page here, loudly.
    fail(err);
    throw err;
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

// -- the model, kept in Cache Storage ------------------------------------------

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
  try {
    return globalThis.caches ? await caches.open(config.cacheName) : null;
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
      const url = absolute(asset.url);
      const key = cacheKey(url, asset.sha256);
      const cache = await openCache();
      if (cache) {
        const hit = await cache.match(key);
        if (hit) {
          const bytes = new Uint8Array(await hit.arrayBuffer());
          if (bytes.length === asset.size && await sha256Hex(bytes) === asset.sha256) {
            modelSource = 'cache';
            row(url, asset.label ?? asset.url, asset.size).finish('cached');
            return bytes;
          }
          await cache.delete(key);
        }
      }
      const bytes = await download(url, asset);
      modelSource = 'network';
      if (cache) {
        // Older versions of this model would only take up the visitor's disk.
        for (const request of await cache.keys()) {
          const old = new URL(request.url);
          old.searchParams.delete('ortweb-sha256');
          if (old.href === url) await cache.delete(request);
        }
        try {
          await cache.put(key, new Response(bytes, { headers: { 'Content-Type': 'application/octet-stream' } }));
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

/** @param {string} url absolute */
function bytesOf(url) {
  if (url === absolute(config.model.url)) return modelBytes();
  const asset = assets.get(url);
  if (!asset) throw new Error(`ortweb: ${url} is not an asset of this site`);
  return download(url, asset);
}

/**
 * `fetch` for the whole page: listed assets go through the verified download
 * (the model through the cache); everything else is untouched.
 * @param {RequestInfo | URL} input
 * @param {RequestInit} [init]
 */
async function ortwebFetch(input, init) {
  const url = absolute(input instanceof Request ? input.url : String(input));
  const method = (init?.method ?? (input instanceof Request ? input.method : 'GET')).toUpperCase();
  if (method !== 'GET' || !assets.has(url)) return nativeFetch(input, init);
  const bytes = url === absolute(config.model.url) ? await modelBytes() : await download(url, /** @type {Asset} */ (assets.get(url)), init);
  return new Response(bytes, { status: 200, headers: { 'Content-Type': contentType(url) } });
}
globalThis.fetch = ortwebFetch;

// Modules are checked by the browser (import map integrity); they only need a row.
if (typeof PerformanceObserver === 'function') {
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      const mod = modules.get(entry.name.split('#')[0]);
      if (mod) row(entry.name, mod.label, mod.size).finish('done');
    }
  });
  observer.observe({ type: 'resource', buffered: true });
}

// -- failing loudly -------------------------------------------------------------

/** @type {(value: any) => void} */
let resolveReady = () => {};
/** @type {(reason: any) => void} */
let rejectReady = () => {};
const ready = new Promise((resolve, reject) => {
  resolveReady = resolve;
  rejectReady = reject;
});
// Callers that never await `ready` must not get an "unhandled rejection".
ready.catch(() => {});
let failed = false;

/** @param {any} err */
function fail(err) {
  if (failed) return;
  failed = true;
  mark('failed');
  let text = err && err.pythonTraceback ? err.pythonTraceback : String((err && err.stack) || err);
  if (/Failed to fetch dynamically imported module/.test(text)) {
    // The browser says no more than this, whether the network failed or the
    // module's content differs from the integrity the page pins for it.
    text += '\n(the browser refused this JS module: it could not be downloaded, or its content ' +
      'does not match the sha384 integrity in the page\'s import map)';
  }
  ui.status('failed');
  ui.error(err && err.pythonTraceback ? `Python raised ${err.name}` : 'The page could not start', text);
  document.documentElement.dataset.ortweb = 'failed';
  rejectReady(err);
}

// -- Python -------------------------------------------------------------------

/** @type {any} */
let pyodide = null;
/** @type {any} */
let runner = null;
/** @type {any} */
let runnerCall = null;
/** @type {string[]} */
let pythonFunctions = [];

/** @param {{type?: string, message?: string, traceback?: string}} envelope */
function pythonError(envelope) {
  const err = new Error(envelope.message ?? envelope.type ?? 'Python error');
  err.name = envelope.type ?? 'PythonError';
  /** @type {any} */ (err).pythonTraceback = envelope.traceback ?? '';
  return err;
}

/** Wait for coi-serviceworker's reload rather than download everything twice. */
async function awaitIsolation() {
  const sw = navigator.serviceWorker;
  if (globalThis.crossOriginIsolated || !config.coiFallback || !sw || !globalThis.isSecureContext || sw.controller) return;
  ui.status('enabling cross-origin isolation (service worker)…');
  const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.race([sw.ready, sleep(3000)]);
  // The worker reloads the page once it is active; if it does not, go on
  // without threads.
  await sleep(1500);
}

/** The lock file with every package URL made absolute (relative names are relative to the lock itself). */
async function lockFileURL() {
  const url = absolute(config.pyodide.lockURL);
  const lock = await (await fetch(url)).json();
  for (const pkg of Object.values(lock.packages)) {
    /** @type {any} */ (pkg).file_name = new URL(/** @type {any} */ (pkg).file_name, url).href;
  }
  return URL.createObjectURL(new Blob([JSON.stringify(lock)], { type: 'application/json' }));
}

async function main() {
  mark('start');
  if (location.protocol === 'file:') {
    throw new Error('this page must be served over http(s): browsers do not let a file:// page load ' +
      'WebAssembly and modules. Run `ortweb serve DIR` (or `python3 -m http.server`) in its folder, ' +
      'or put the folder on a static host.');
  }
  await awaitIsolation();
  installBridge({
    ortBaseURL: absolute(config.ortBaseURL),
    webgpuBuild: config.webgpuBuild,
    defaultProviders: config.providers,
  });
  ui.status('loading Pyodide…');
  // The model's external data files (config.data) go beside it, under their names.
  const files = [config.model, config.script, ...config.files, ...(config.data ?? [])];
  // The app's files download while Pyodide starts.
  const fileBytes = Promise.all(files.map((f) => bytesOf(absolute(f.url))));
  fileBytes.catch(() => {});
  const runnerBytes = bytesOf(absolute(config.runner.url));
  runnerBytes.catch(() => {});
  /** @type {Asset[]} */
  const wheels = config.wheels ?? [];
  const wheelBytes = Promise.all(wheels.map((w) => bytesOf(absolute(w.url))));
  wheelBytes.catch(() => {});
  const installerBytes = config.installer ? bytesOf(absolute(config.installer.url)) : null;
  installerBytes?.catch(() => {});
  pyodide = await bootPyodide({
    indexURL: absolute(config.pyodide.indexURL),
    lockFileURL: await lockFileURL(),
    packages: config.packages,
    stdout: (line) => ui.print('stdout', line),
    stderr: (line) => ui.print('stderr', line),
    progress: (msg) => ui.status(`${msg}…`),
  });
  mark('pyodide');
  if (wheels.length && installerBytes) {
    ui.status(`installing ${wheels.map((w) => w.name).join(', ')}…`);
    await installWheels(wheels, await wheelBytes, await installerBytes);
    mark('wheels');
  }
  const cwd = config.cwd;
  pyodide.FS.mkdirTree(cwd);
  const loaded = await fileBytes;
  files.forEach((f, i) => {
    const path = `${cwd}/${f.name}`;
    // An external data file's location may hold folders.
    pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf('/')));
    pyodide.FS.writeFile(path, loaded[i]);
  });
  pyodide.FS.mkdirTree('/ortweb_site');
  pyodide.FS.writeFile('/ortweb_site/_ortweb_site.py', await runnerBytes);
  pyodide.runPython("import sys\nif '/ortweb_site' not in sys.path: sys.path.append('/ortweb_site')");
  runner = pyodide.pyimport('_ortweb_site');
  // One proxy for every call; fetching `runner.call` each time would leak one per call.
  runnerCall = runner.call;
  ui.status(`running ${config.script.name}…`);
  mark('script');
  const spec = {
    // Relative, so that tracebacks say `File "app.py"` as `python app.py` would.
    path: config.script.name,
    cwd,
    argv: [config.script.name],
    env: {
      ORTWEB_MODEL: config.model.name,
      ORTWEB_MODEL_URL: absolute(config.model.url),
      ORTWEB_PROVIDERS: config.providers.join(','),
    },
  };
  const result = JSON.parse(await runner.run_script(JSON.stringify(spec)));
  pythonFunctions = result.functions;
  if (!result.ok) {
    ui.print('stderr', result.traceback.trimEnd());
    throw pythonError(result);
  }
  mark('ready');
  const seconds = ((timings.ready - timings.start) / 1000).toFixed(1);
  ui.status(`ready (${seconds} s)`);
  document.documentElement.dataset.ortweb = 'ready';
  resolveReady({ timings: { ...timings }, functions: [...pythonFunctions] });
}

/**
 * Install the site's wheels with micropip (install_wheels.py): their bytes were
 * checked against the manifest on download; the Pyodide packages they need were
 * loaded with the others at boot.
 * @param {Asset[]} wheels in install order
 * @param {Uint8Array[]} bytes
 * @param {Uint8Array} installer the source of install_wheels.py
 */
async function installWheels(wheels, bytes, installer) {
  const dir = '/tmp/ortweb-wheels';
  pyodide.FS.mkdirTree(dir);
  // micropip reads the name, version and tags from the file name: keep it.
  const paths = wheels.map((w, i) => {
    pyodide.FS.writeFile(`${dir}/${w.name}`, bytes[i]);
    return `${dir}/${w.name}`;
  });
  const scope = pyodide.globals.get('dict')();
  try {
    scope.set('ORTWEB_INSTALL', JSON.stringify({ wheels: paths, requirements: [], packages: [] }));
    await pyodide.runPythonAsync(new TextDecoder().decode(installer),
      { globals: scope, filename: 'install_wheels.py' });
  } catch (err) {
    const e = /** @type {any} */ (err);
    const error = new Error(`installing the site's wheels failed: ${e.message ?? e}`);
    error.name = e.type ?? 'PythonError';
    /** @type {any} */ (error).pythonTraceback = String(e.message ?? e);
    throw error;
  } finally {
    scope.destroy();
  }
}

/**
 * Call a function the script defined; resolves to its result as plain JS
 * values (dicts → objects, lists/tuples/numpy arrays → arrays).
 * @param {string} name
 * @param {...any} args converted to Python (arrays → lists, objects → dicts, typed arrays → memoryview)
 */
async function call(name, ...args) {
  await ready;
  const envelope = await runnerCall(name, args);
  if (!envelope.ok) {
    ui.print('stderr', envelope.traceback.trimEnd());
    ui.error(`Python raised ${envelope.type} in ${name}()`, envelope.traceback);
    throw pythonError(envelope);
  }
  return envelope.value;
}

/** @type {any} */ (window).ortweb = {
  config,
  ready,
  call,
  mark,
  timings,
  /** @param {string} line */
  print: (line) => ui.print('stdout', line),
  functions: () => [...pythonFunctions],
  get pyodide() { return pyodide; },
  get modelSource() { return modelSource; },
  get crossOriginIsolated() { return globalThis.crossOriginIsolated === true; },
};

main().catch(fail);
