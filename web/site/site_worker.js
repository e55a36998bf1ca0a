// @ts-check
/**
 * The Web Worker of a site built with `ortweb site --worker` (the default): Pyodide,
 * ortweb and onnxruntime-web run here, off the page's main thread, so a model that
 * runs for a while never freezes the page.
 *
 * The page (`boot.js`) starts this module worker and sends `{type: 'init', config,
 * base, controlled}` (`controlled`: the site's service worker serves the page); from then on the worker reports what the page shows as messages:
 * `status`, `print`, `mark`, `row` (download progress), `post` (the script's
 * `ortweb_page.post`), then `ready` or `failed`. `window.ortweb.call` arrives as
 * `{type: 'call', id, name, args}` (typed arrays are copied once, by structured
 * clone) and is answered by `{type: 'result', id, envelope}`.
 * @module site_worker
 */
import { checkModulesWith } from './bridge/runtime.js';
import { createLoader } from './loader.js';
import { startPython } from './python.js';
import {
  builtSnapshot, canRestoreBuilt, dropSnapshot, keepBuilt, keptPlace, loadSnapshot, makeSnapshot, snapshotPlace,
} from './snapshot.js';
import { keepPackages, loadUnpacked, unpackedPlace } from './unpacked.js';

/** @type {any} */
const scope = globalThis;

/** @param {any} message @param {Transferable[]} [transfer] */
const send = (message, transfer) => scope.postMessage(message, transfer ?? []);

/** ms since the epoch, so that the page can put a worker's marks on its own clock. */
const epoch = () => performance.timeOrigin + performance.now();

/** @param {any} err */
function errorMessage(err) {
  return {
    name: String(err?.name ?? 'Error'),
    message: String(err?.message ?? err),
    stack: String(err?.stack ?? err),
    pythonTraceback: err?.pythonTraceback,
  };
}

let failed = false;
/** @param {any} err */
function fail(err) {
  if (failed) return;
  failed = true;
  send({ type: 'failed', error: errorMessage(err), at: epoch() });
}

/** @type {Map<string, {last: number}>} */
const rows = new Map();

/** @param {any} config @param {string} base @param {boolean} controlled */
async function main(config, base, controlled) {
  send({ type: 'mark', name: 'worker', at: epoch() });
  const loader = createLoader(config, base, {
    row(url, label, total) {
      if (!rows.has(url)) {
        rows.set(url, { last: 0 });
        send({ type: 'row', op: 'create', url, label, total });
      }
      const state = /** @type {{last: number}} */ (rows.get(url));
      return {
        update(loaded) {
          const now = performance.now();
          // A message per network chunk would cost more than the download itself.
          if (now - state.last > 50) {
            state.last = now;
            send({ type: 'row', op: 'update', url, loaded });
          }
        },
        finish(result) {
          send({ type: 'row', op: 'finish', url, state: result });
        },
      };
    },
    fail,
  }, { controlled });
  loader.install();
  // Modules the browser loads here are not covered by the page's import map: each is
  // checked against the manifest before it is imported (see loader.checkModules).
  const pyodideModules = ['pyodide.mjs', 'pyodide.asm.js']
    .map((name) => loader.absolute(config.pyodide.indexURL + name));
  const pyodideChecked = loader.checkModules(pyodideModules);
  pyodideChecked.catch(() => {});
  checkModulesWith((urls, fatal) => loader.checkModules(urls, fatal));
  // A memory snapshot of the interpreter (snapshot.js): the build's, unpacked by an
  // earlier visit or downloading from now on; else one made in the browser. Both are
  // kept only under the service worker, whose cache holds Pyodide's checked files for
  // the worker that makes one.
  const restorable = canRestoreBuilt(config);
  const site = controlled ? await snapshotPlace(config, loader.absolute, base).catch(() => null) : null;
  const kept = site && restorable ? keptPlace(site, config) : null;
  const built = restorable ? builtSnapshot(config, loader, kept) : null;
  built?.catch(() => {});
  const place = !restorable && config.snapshotMaker ? site : null;
  const snapshot = built ? built.then((b) => b?.bytes ?? null)
    : (place ? loadSnapshot(place) : Promise.resolve(null));
  // What an earlier visit unpacked from the wheels (unpacked.js).
  const wheelsPlace = unpackedPlace(site, config, loader.absolute);
  const unpacked = loadUnpacked(wheelsPlace, snapshot);
  const python = await startPython(config, loader, {
    print: (stream, line) => send({ type: 'print', stream, line }),
    status: (text) => send({ type: 'status', text }),
    mark: (name) => send({ type: 'mark', name, at: epoch() }),
    post: (data) => send({ type: 'post', data }),
  }, {
    beforeBoot: pyodideChecked,
    snapshot,
    unpacked,
    async snapshotFailed() {
      for (const stored of [place, kept]) if (stored) await dropSnapshot(stored);
    },
  });
  scope.onmessage = async (/** @type {MessageEvent} */ event) => {
    const { type, id, name, args } = event.data ?? {};
    if (type !== 'call') return;
    let envelope;
    try {
      envelope = await python.call(name, args);
    } catch (err) {
      envelope = { ok: false, type: errorMessage(err).name, message: String(err), traceback: String(err) };
    }
    try {
      send({ type: 'result', id, envelope });
    } catch (err) {
      // A value structured clone cannot copy (a Python object to_js left as a proxy).
      const message = `the result of ${name}() cannot be sent to the page: ${err}`;
      send({ type: 'result', id, envelope: { ok: false, type: 'TypeError', message, traceback: `TypeError: ${message}\n` } });
    }
  };
  send({
    type: 'ready', functions: python.functions, modelSource: loader.modelSource,
    bootedFrom: python.bootedFrom, at: epoch(),
  });
  // Off the first visit's critical path, for the next visit: its wheels unpacked
  // (`window.ortweb.packages` resolves once stored) and the snapshot it boots from
  // (`window.ortweb.snapshot`).
  keepPackages(wheelsPlace, python.unpacking).then((kept) => send({ type: 'packages', ...kept }));
  const keptNow = await keepBuilt(kept, built, python.bootedFrom);
  if (keptNow) {
    send({ type: 'snapshot', ...keptNow });
  } else if (place && python.bootedFrom === 'fresh') {
    const makerURL = loader.absolute(config.snapshotMaker);
    loader.checkModules([makerURL])
      .then(() => makeSnapshot(makerURL, place, loader.absolute(config.pyodide.indexURL),
        loader.absolute(config.pyodide.lockURL)))
      .catch((err) => ({ stored: false, error: String(err) }))
      .then((result) => send({ type: 'snapshot', ...result }));
  } else {
    const error = (place || kept) && python.bootedFrom === 'snapshot'
      ? 'booted from a kept snapshot' : 'no snapshot kept here';
    send({ type: 'snapshot', stored: false, error });
  }
}

scope.onmessage = (/** @type {MessageEvent} */ event) => {
  const { type, config, base, controlled } = event.data ?? {};
  if (type !== 'init') return;
  main(config, base, Boolean(controlled)).catch(fail);
};
// A module that fails to load or a throw outside main(): the page hears of it too.
scope.addEventListener('error', (/** @type {ErrorEvent} */ event) => fail(event.error ?? event.message));
scope.addEventListener('unhandledrejection', (/** @type {PromiseRejectionEvent} */ event) => {
  console.warn('ortweb worker: unhandled rejection', event.reason);
});
send({ type: 'loaded', at: epoch() });
