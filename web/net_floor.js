// @ts-check
/**
 * The floor of `ortweb bench --sections network`: what a page that needs Pyodide +
 * numpy and plain-JS onnxruntime-web with one model cannot do without, downloaded all
 * at once. Every file is requested in the page's first round trip (this module's
 * first lines), from the site `ortweb site` built, so both sides get the same bytes
 * with the same compression from the same server:
 *   Pyodide's core (`pyodide.mjs`, `pyodide.asm.js`, `pyodide.asm.wasm`,
 *   `python_stdlib.zip`, the lock) and the numpy wheel; onnxruntime-web's wasm build
 *   (`ort.wasm.min.mjs`, `ort-wasm-simd-threaded.mjs`/`.wasm`); the model.
 * Pyodide's and ORT's own `fetch`es of those URLs get the responses already under way
 * (the realm's `fetch` is wrapped), and `pyodide.asm.js` runs from a script element
 * started at once (loadPyodide skips loading it when `_createPyodideModule` exists).
 *
 * Query: `site` (the site's folder, relative to this page), `model` and `wheel`
 * (paths in it), `kept` (JSON: where the site keeps each of these files, by path: its
 * hash-keyed path, see site_hashed.py), `dims` (the model's input shape).
 * `window.floorResult` resolves to `{ok, ms, marks}`: ms since navigation start,
 * when both numpy is imported and the model's first run is done.
 */

const params = new URLSearchParams(location.search);
const site = new URL(params.get('site') ?? '../site/', location.href).href;
const at = (/** @type {string} */ path) => new URL(path, site).href;
/** @type {Record<string, string>} */
const kept = JSON.parse(params.get('kept') ?? '{}');
/** @type {Object<string, number>} */
const marks = {};
const mark = (/** @type {string} */ name) => { marks[name] = performance.now(); };

const files = {
  wasm: at('pyodide/pyodide.asm.wasm'),
  stdlib: at('pyodide/python_stdlib.zip'),
  lock: at('pyodide/pyodide-lock.json'),
  numpy: at(`pyodide/${params.get('wheel')}`),
  ortWasm: at('ort/ort-wasm-simd-threaded.wasm'),
  model: at(/** @type {string} */ (params.get('model'))),
};
// All at once, before anything else: the whole point of the floor.
/** @type {Map<string, Promise<Response>>} */
const started = new Map(Object.values(files).map((url) => {
  const path = url.slice(site.length);
  return [url, fetch(path in kept ? at(kept[path]) : url)];
}));
const asmScript = new Promise((resolve, reject) => {
  const script = document.createElement('script');
  script.src = at('pyodide/pyodide.asm.js');
  script.onload = resolve;
  script.onerror = () => reject(new Error('pyodide.asm.js failed to load'));
  document.head.appendChild(script);
});
const pyodideModule = import(at('pyodide/pyodide.mjs'));
const ortModule = import(at('ort/ort.wasm.min.mjs'));
// ORT imports its glue itself; started here, its import finds it in the module map.
const ortGlue = import(at('ort/ort-wasm-simd-threaded.mjs'));

const plainFetch = globalThis.fetch.bind(globalThis);
/** Pyodide's and ORT's fetches of a started URL get that response (once). */
globalThis.fetch = (input, init) => {
  const url = new URL(input instanceof Request ? input.url : String(input), location.href).href;
  const response = started.get(url);
  if (response === undefined) return plainFetch(input, init);
  started.delete(url);
  return response;
};

async function pyodideAndNumpy() {
  const [{ loadPyodide }] = await Promise.all([pyodideModule, asmScript]);
  const pyodide = await loadPyodide({ indexURL: at('pyodide/'), lockFileURL: files.lock,
                                      stdLibURL: files.stdlib, packages: ['numpy'] });
  mark('pyodide_numpy_loaded');
  pyodide.runPython('import numpy');
  mark('numpy_imported');
}

async function ortFirstRun() {
  const [ort] = await Promise.all([ortModule, ortGlue]);
  ort.env.wasm.wasmPaths = at('ort/');
  const bytes = new Uint8Array(await (await /** @type {Promise<Response>} */ (
    started.get(files.model) ?? fetch(files.model))).arrayBuffer());
  started.delete(files.model);
  mark('model_fetched');
  const session = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
  mark('session_created');
  const dims = (params.get('dims') ?? '1,64').split(',').map(Number);
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1)).fill(0.5);
  await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', data, dims) });
  mark('first_run');
}

/** @type {any} */ (window).floorResult = (async () => {
  try {
    await Promise.all([pyodideAndNumpy(), ortFirstRun()]);
    const ms = performance.now();
    /** @type {any} */ (document.getElementById('status')).textContent = 'done';
    return { ok: true, ms, marks };
  } catch (err) {
    return { ok: false, message: String(/** @type {any} */ (err)?.stack ?? err) };
  }
})();
