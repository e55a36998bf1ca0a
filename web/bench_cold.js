// @ts-check
/**
 * Cold-start anchors for `ortweb bench`, each in a fresh browser context:
 *  - `?mode=ort&model=URL&dims=1,64`: onnxruntime-web alone (plain wasm build, as
 *    ortweb loads for wasm sessions): import, fetch the model, create, first run;
 *  - `?mode=pyodide`: Pyodide's core and numpy, loaded the way ortweb's page loads
 *    them (`bootPyodide`), then `import numpy`.
 * `window.benchResult` resolves to `{ok, ms, marks, bytes, count}`: ms since
 * navigation start (performance.now()), the point each step finished.
 */
import { resourceBytes } from './bench_plain.js';

const params = new URLSearchParams(location.search);
/** @type {Object<string, number>} */
const marks = {};
const mark = (/** @type {string} */ name) => { marks[name] = performance.now(); };

async function coldOrt() {
  const ort = await import('/ort/ort.wasm.min.mjs');
  ort.env.wasm.wasmPaths = '/ort/';
  mark('ort_imported');
  const response = await fetch(/** @type {string} */ (params.get('model')));
  const bytes = new Uint8Array(await response.arrayBuffer());
  mark('model_fetched');
  const session = await ort.InferenceSession.create(bytes, { executionProviders: ['wasm'] });
  mark('session_created');
  const dims = (params.get('dims') ?? '1,64').split(',').map(Number);
  const data = new Float32Array(dims.reduce((a, b) => a * b, 1));
  await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', data, dims) });
  mark('first_run');
}

async function coldPyodide() {
  const { bootPyodide } = await import('/bridge/pyodide_boot.js');
  const pyodide = await bootPyodide({ indexURL: '/pyodide/', packages: ['numpy'] });
  mark('pyodide_numpy_loaded');
  pyodide.runPython('import numpy');
  mark('numpy_imported');
}

/** @type {any} */ (window).benchResult = (async () => {
  try {
    await (params.get('mode') === 'pyodide' ? coldPyodide() : coldOrt());
    const ms = performance.now();
    /** @type {any} */ (document.getElementById('status')).textContent = 'done';
    return { ok: true, ms, marks, ...resourceBytes() };
  } catch (err) {
    return { ok: false, message: String(/** @type {any} */ (err)?.stack ?? err) };
  }
})();
