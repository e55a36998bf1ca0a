// @ts-check
/**
 * The bootstrap of a static site made by `ortweb site`: the page's side.
 *
 * Reads the JSON config that `index.html` carries (`#ortweb-config`), draws the
 * page's parts (status line, download list with a row per file, console, error
 * box) and publishes `window.ortweb`, through which page JS calls the Python
 * functions the script defined. The site's Python runs
 *  - in a module Web Worker (`ortweb site --worker`, the default): `site_worker.js`
 *    downloads and checks every file, boots Pyodide and runs the script there, and
 *    tells the page what to show; the page's main thread never runs Python;
 *  - or on the page's main thread (`--main-thread`): `in_page.js`.
 * Either way every listed file is checked against the manifest's sha256 (JS
 * modules of the page by the import map's `integrity`), the model is kept in
 * Cache Storage by its sha256, and Python's output and tracebacks reach the page.
 * Python's output is also mirrored to the browser console with the tag the host
 * tools recognise, so headless checks can read it.
 * @module boot
 */
import { printTagged } from './bridge/console_tag.js';

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

/** @type {Map<string, {label: string, size: number}>} absolute URL → JS module */
const modules = new Map();
for (const mod of config.modules ?? []) modules.set(absolute(mod.url), mod);
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


// -- Python, in the worker or on this page -------------------------------------------

/** @type {string[]} */
let pythonFunctions = [];
/** @type {'network'|'cache'|null} */
let modelSource = null;
/** @type {any} */
let pyodide = null;
/** @type {Worker|null} */
let worker = null;
/** @type {'snapshot'|'fresh'|null} how the worker's Pyodide started (snapshot.js) */
let bootedFrom = null;
/** @type {(value: any) => void} */
let resolveSnapshot = () => {};
/** @type {Promise<any>} what the worker reports of the memory snapshot, once ready */
const snapshotDone = new Promise((resolve) => { resolveSnapshot = resolve; });
/** @type {(value: any) => void} */
let resolvePackages = () => {};
/** @type {Promise<any>} where this visit's wheels came from, and whether they are kept */
const packagesDone = new Promise((resolve) => { resolvePackages = resolve; });
/** @type {(name: string, args: any[]) => Promise<any>} */
let callPython = () => Promise.reject(new Error('ortweb: Python has not started'));

/** @param {{type?: string, message?: string, traceback?: string}} envelope */
function pythonError(envelope) {
  const err = new Error(envelope.message ?? envelope.type ?? 'Python error');
  err.name = envelope.type ?? 'PythonError';
  /** @type {any} */ (err).pythonTraceback = envelope.traceback ?? '';
  return err;
}

/** `ortweb_page.post(data)` from the script: an `ortweb:message` event on `window`. @param {any} data */
function postToPage(data) {
  window.dispatchEvent(new CustomEvent('ortweb:message', { detail: data }));
}

/** Whether the site's service worker (ortweb-sw.js) serves this page. */
const controlled = () => Boolean(globalThis.isSecureContext && navigator.serviceWorker?.controller);

/** Wait for the service worker's reload (hosts without headers) rather than download everything twice. */
async function awaitIsolation() {
  const sw = navigator.serviceWorker;
  if (globalThis.crossOriginIsolated || !config.serviceWorker || !sw || !globalThis.isSecureContext || sw.controller) return;
  if (sessionStorage.getItem('ortweb-sw-reloaded')) return; // it reloaded once already: go on without
  ui.status('enabling cross-origin isolation (service worker)…');
  const sleep = (/** @type {number} */ ms) => new Promise((resolve) => setTimeout(resolve, ms));
  await Promise.race([sw.ready, sleep(3000)]);
  // The worker reloads the page once it controls it; if it does not, go on
  // without threads.
  await sleep(1500);
}

/**
 * On a first visit (headers sent, so no reload): wait, briefly, for the service worker
 * to take control before anything downloads, so that what this visit fetches is stored
 * as it streams in, not fetched a second time for the offline cache.
 */
async function awaitController() {
  const sw = navigator.serviceWorker;
  if (!config.serviceWorker || !sw || !globalThis.isSecureContext || sw.controller) return;
  await Promise.race([
    new Promise((resolve) => sw.addEventListener('controllerchange', resolve, { once: true })),
    new Promise((resolve) => setTimeout(resolve, 2000)),
  ]);
}

/**
 * Once the page is ready: have the service worker store the files of the manifest it
 * has not stored yet (those this visit did not need), for an offline visit.
 * Resolves to `{stored, total, unstored}` files (`unstored`: over the worker's size
 * limit), or null without a service worker.
 * @returns {Promise<{stored: number, total: number, unstored: number}|null>}
 */
async function makeOffline() {
  const sw = navigator.serviceWorker;
  if (!config.serviceWorker || !sw || !globalThis.isSecureContext) return null;
  const registration = await Promise.race([sw.ready, new Promise((resolve) => setTimeout(resolve, 10_000))]);
  const active = /** @type {ServiceWorkerRegistration|undefined} */ (registration)?.active;
  if (!active) return null;
  return new Promise((resolve) => {
    sw.addEventListener('message', function answer(event) {
      if (event.data?.type !== 'precached') return;
      sw.removeEventListener('message', answer);
      resolve(event.data.error ? null
        : { stored: event.data.stored, total: event.data.total, unstored: event.data.unstored });
    });
    active.postMessage({ type: 'precache' });
  });
}

/** The script ran: the page is ready. @param {string[]} functions */
function becomeReady(functions) {
  pythonFunctions = functions;
  mark('ready');
  const seconds = ((timings.ready - timings.start) / 1000).toFixed(1);
  ui.status(`ready (${seconds} s)`);
  document.documentElement.dataset.ortweb = 'ready';
  resolveReady({ timings: { ...timings }, functions: [...pythonFunctions] });
  offline = makeOffline();
  offline.catch(() => {});
}

/** @type {Promise<{stored: number, total: number}|null>} */
let offline = Promise.resolve(null);

/** `--main-thread`: the loader and Python on this page. */
async function startInPage() {
  const [{ createLoader }, { startPython }, snapshots, wheels] = await Promise.all(
    [import('./loader.js'), import('./python.js'), import('./snapshot.js'), import('./unpacked.js')]);
  const loader = createLoader(config, document.baseURI, { row, fail }, { controlled: controlled() });
  loader.install();
  // What an earlier visit kept when the service worker serves the page: the build's
  // snapshot of the interpreter unpacked, if it shipped one (snapshot.js), and the
  // wheels unpacked (unpacked.js).
  const site = controlled()
    ? await snapshots.snapshotPlace(config, loader.absolute, document.baseURI).catch(() => null) : null;
  const kept = site && snapshots.canRestoreBuilt(config) ? snapshots.keptPlace(site, config) : null;
  const built = snapshots.builtSnapshot(config, loader, kept);
  built.catch(() => {});
  const wheelsPlace = wheels.unpackedPlace(site, config, loader.absolute);
  const python = await startPython(config, loader, {
    print: (stream, line) => ui.print(stream, line),
    status: (text) => ui.status(text),
    mark,
    post: postToPage,
  }, {
    snapshot: built.then((b) => b?.bytes ?? null),
    unpacked: wheels.loadUnpacked(wheelsPlace, built),
    async snapshotFailed() {
      if (kept) await snapshots.dropSnapshot(kept);
    },
  });
  pyodide = python.pyodide;
  bootedFrom = python.bootedFrom;
  modelSource = loader.modelSource;
  callPython = python.call;
  becomeReady(python.functions);
  // Off the critical path: the next visit reads these unpacked.
  wheels.keepPackages(wheelsPlace, python.unpacking).then(resolvePackages);
  const keptNow = await snapshots.keepBuilt(kept, built, bootedFrom);
  if (keptNow && 'error' in keptNow) console.warn('ortweb: could not keep the snapshot', keptNow.error);
}

/**
 * Why the worker could not start, naming its file.
 * @param {string} url @param {string} why
 */
function workerError(url, why) {
  const err = new Error(`could not start the site's Web Worker ${url}: ${why}`);
  err.name = 'WorkerError';
  return err;
}

/**
 * The bytes of the worker's own modules, checked (SRI) before the worker imports them;
 * those marked `later` (an engine's code, bridge_js/lazy_engine.js) are checked by the
 * worker when a session first tries that engine.
 */
async function checkWorkerModules() {
  const own = (config.modules ?? []).filter((/** @type {any} */ m) => m.url.startsWith('ortweb/') && !m.later);
  await Promise.all(own.map(async (/** @type {any} */ m) => {
    const url = absolute(m.url);
    let response;
    try {
      response = await fetch(url, { integrity: m.integrity });
    } catch (err) {
      // A failed integrity check and a missing file both end in "Failed to fetch".
      const probe = await fetch(url, { method: 'HEAD' }).catch(() => null);
      if (probe && !probe.ok) throw workerError(m.url, `${m.url}: HTTP ${probe.status} ${probe.statusText}`);
      throw workerError(m.url, `${m.url} could not be downloaded, or its content does not match ` +
        `the sha384 integrity the page pins for it (${err})`);
    }
    if (!response.ok) throw workerError(m.url, `${m.url}: HTTP ${response.status} ${response.statusText}`);
    await response.arrayBuffer();
  }));
}

/** `--worker`: Python in a module Web Worker; this page only shows what it reports. */
async function startWorker() {
  const file = config.worker;
  await checkWorkerModules();
  const origin = performance.timeOrigin;
  /** @type {Map<number, {resolve: (v: any) => void}>} */
  const pending = new Map();
  let nextId = 1;
  await new Promise((resolve, reject) => {
    try {
      // Started from a blob: that imports the file: a worker started from the site's
      // URL makes the browser check ortweb-sw.js for an update once more per visit.
      const source = `import ${JSON.stringify(absolute(file))};`;
      const url = URL.createObjectURL(new Blob([source], { type: 'text/javascript' }));
      worker = new Worker(url, { type: 'module', name: 'ortweb' });
    } catch (err) {
      // A Content-Security-Policy without worker-src for this file, for one.
      reject(workerError(file, String(err)));
      return;
    }
    worker.addEventListener('error', (event) => {
      event.preventDefault();
      reject(workerError(file, event.message || 'the browser refused it (missing file, a module it ' +
        'imports is missing, or a Content-Security-Policy that forbids workers)'));
    });
    worker.addEventListener('message', (event) => {
      const msg = event.data;
      switch (msg.type) {
        case 'loaded':
          /** @type {Worker} */ (worker).postMessage({ type: 'init', config, base: document.baseURI, controlled: controlled() });
          break;
        case 'mark':
          timings[msg.name] = msg.at - origin;
          break;
        case 'status':
          ui.status(msg.text);
          break;
        case 'print':
          ui.print(msg.stream, msg.line);
          break;
        case 'post':
          postToPage(msg.data);
          break;
        case 'row': {
          if (msg.op === 'create') row(msg.url, msg.label, msg.total);
          else if (msg.op === 'update') rows.get(msg.url)?.update(msg.loaded);
          else rows.get(msg.url)?.finish(msg.state);
          break;
        }
        case 'snapshot':
          resolveSnapshot(msg);
          break;
        case 'packages': {
          const { type, ...packages } = msg;
          resolvePackages(packages);
          break;
        }
        case 'ready':
          modelSource = msg.modelSource;
          bootedFrom = msg.bootedFrom;
          becomeReady(msg.functions);
          resolve(null);
          break;
        case 'failed': {
          const err = new Error(msg.error.message);
          err.name = msg.error.name;
          err.stack = msg.error.stack;
          if (msg.error.pythonTraceback) /** @type {any} */ (err).pythonTraceback = msg.error.pythonTraceback;
          reject(err);
          break;
        }
        case 'result':
          pending.get(msg.id)?.resolve(msg.envelope);
          pending.delete(msg.id);
          break;
        default:
          break;
      }
    });
  });
  callPython = (name, args) => new Promise((resolve, reject) => {
    const id = nextId++;
    pending.set(id, { resolve });
    try {
      // Structured clone: typed arrays are copied once, as they are.
      /** @type {Worker} */ (worker).postMessage({ type: 'call', id, name, args });
    } catch (err) {
      pending.delete(id);
      reject(new TypeError(`the arguments of ${name}() cannot be sent to the site's worker: ${err}`));
    }
  });
}

async function main() {
  mark('start');
  if (location.protocol === 'file:') {
    throw new Error('this page must be served over http(s): browsers do not let a file:// page load ' +
      'WebAssembly and modules. Run `ortweb serve DIR` (or `python3 -m http.server`) in its folder, ' +
      'or put the folder on a static host.');
  }
  await awaitIsolation();
  await awaitController();
  mark('controlled');
  // The first visit's large files start downloading now, while the modules load
  // (ortweb-sw.js, prefetch); the loader's requests then wait for them.
  if (controlled()) navigator.serviceWorker.controller?.postMessage({ type: 'prefetch' });
  if (config.worker) await startWorker();
  else await startInPage();
}

/**
 * Call a function the script defined; resolves to its result as plain JS
 * values (dicts → objects, lists/tuples/numpy arrays → arrays).
 * @param {string} name
 * @param {...any} args converted to Python (arrays → lists, objects → dicts, typed arrays → memoryview)
 */
async function call(name, ...args) {
  await ready;
  const envelope = await callPython(name, args);
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
  /** 'worker' or 'main-thread': where the site's Python runs. */
  mode: config.worker ? 'worker' : 'main-thread',
  /** The Pyodide API object on the main thread; null in worker mode (it lives in the worker). */
  get pyodide() { return pyodide; },
  /** The site's Web Worker in worker mode, else null. */
  get worker() { return worker; },
  get modelSource() { return modelSource; },
  /**
   * 'snapshot' when this visit's Pyodide was restored from a memory snapshot (the
   * build's, or one an earlier visit stored), 'fresh' when it booted as usual; null
   * before `ready`.
   */
  get pythonBoot() { return bootedFrom; },
  /**
   * Worker mode, after `ready`: resolves once the memory snapshot for the next visit
   * is stored (`{stored: true, bytes, ms}`) or not made (`{stored: false, error}`:
   * this visit booted from one, or no service worker serves the page).
   */
  get snapshot() { return config.worker ? ready.then(() => snapshotDone) : Promise.resolve(null); },
  /**
   * After `ready`: resolves once what this visit unpacked from Pyodide's wheels is kept
   * for the next visit (unpacked.js): `{from, stored: true, bytes, ms}` or `{from,
   * stored: false, error}`, `from` saying whether this visit wrote them from an earlier
   * visit's copy ('kept') or unpacked the wheels ('wheels'); `{from: 'kept'}` when it
   * had nothing new to keep.
   */
  get packages() { return ready.then(() => packagesDone); },
  /** Whether the site's service worker serves this page. */
  get controlled() { return controlled(); },
  /**
   * Resolves, after `ready`, once the service worker stored every file of the site
   * (`{stored, total}`), or to null without one: then a visit works offline.
   */
  get offline() { return ready.then(() => offline); },
  get crossOriginIsolated() { return globalThis.crossOriginIsolated === true; },
};

main().catch(fail);
