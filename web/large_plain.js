// @ts-check
/**
 * A model with external data loaded by plain onnxruntime-web, no Python: the
 * anchor of `ortweb bench --sections large`, and the reproduction of what
 * onnxruntime-web 1.30 itself does with a model over 2 GB (README, Large models).
 *
 * Query: `model` (URL of the .onnx), `data` (its external data files, comma
 * separated, each fetched by ORT-web from beside the model), `ep` (`wasm`, the
 * default, or `webgpu`), `dim` (the input is float32 `[1, dim]`, filled with
 * `((i % 17) - 8) / 8`), `run` (`0` to stop at the ready session).
 *
 * `window.largeResult` resolves to `{ok, marks, y?}` (`marks`: performance.now()
 * when each step finished; `y`: the output as an array) or `{ok: false, message}`.
 * Without `model` in the query nothing loads until `window.largeLoad(query)` is
 * called (the bench starts its memory measurement first).
 */

/**
 * @param {URLSearchParams} params
 * @param {(name: string) => void} mark
 */
export async function loadLarge(params, mark) {
  const ep = params.get('ep') ?? 'wasm';
  const ort = await import(ep === 'webgpu' ? '/ort/ort.webgpu.min.mjs' : '/ort/ort.wasm.min.mjs');
  ort.env.wasm.wasmPaths = '/ort/';
  mark('ort_imported');
  const model = /** @type {string} */ (params.get('model'));
  const names = (params.get('data') ?? '').split(',').filter(Boolean);
  // As a user writes it: each data file a URL beside the model, fetched by ORT-web.
  const externalData = names.map((path) => ({ path, data: new URL(path, new URL(model, location.href)).href }));
  mark('load_start');
  const session = await ort.InferenceSession.create(model, { executionProviders: [ep], externalData });
  mark('session_created');
  if (params.get('run') === '0') return { session };
  const dim = Number(params.get('dim') ?? '4096');
  const x = new Float32Array(dim).map((_, i) => ((i % 17) - 8) / 8);
  const out = await session.run({ [session.inputNames[0]]: new ort.Tensor('float32', x, [1, dim]) });
  mark('first_run');
  return { session, y: Array.from(out[session.outputNames[0]].data) };
}

/**
 * Load as `query` says (same keys as the page's own query) and release the session;
 * `{ok, marks, y?}` or `{ok: false, message}`. The bench calls it after the host
 * has started its memory measurement.
 * @param {string} query
 */
async function largeLoad(query) {
  /** @type {Object<string, number>} */
  const marks = {};
  try {
    const { session, y } = await loadLarge(new URLSearchParams(query), (name) => { marks[name] = performance.now(); });
    await session.release();
    return { ok: true, marks, y };
  } catch (err) {
    return { ok: false, message: String(/** @type {any} */ (err)?.stack ?? err) };
  }
}

if (location.pathname.endsWith('/large_plain.html')) {
  /** @type {any} */ (window).largeLoad = largeLoad;
  if (new URLSearchParams(location.search).has('model')) {
    /** @type {any} */ (window).largeResult = largeLoad(location.search).then((r) => {
      /** @type {any} */ (document.getElementById('status')).textContent = r.ok ? 'done' : 'failed';
      return r;
    });
  }
}
