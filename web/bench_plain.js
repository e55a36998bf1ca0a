// @ts-check
/**
 * Plain-JS anchors for `ortweb bench`: the same onnxruntime-web calls ortweb makes,
 * without Python, so each ortweb figure has its engine-only twin measured in the
 * same page (imported by the in-page bench scripts) or in a page of its own
 * (`bench_plain.html`, the cold-start anchor).
 *
 * Every timing is taken here with `performance.now()` around the loop, so the hop
 * from Python into JS that starts a block is not counted against plain JS.
 */

/** @type {Map<number, {ort: any, session: any}>} */
const sessions = new Map();
let nextId = 1;

/**
 * The ORT-web module of `build`: the same instance ortweb's bridge imported when
 * the URL matches, so env settings (wasmPaths, numThreads) are shared, not changed.
 * @param {string} build 'wasm' or 'webgpu'
 */
export function ortModule(build) {
  return import(build === 'webgpu' ? '/ort/ort.webgpu.min.mjs' : '/ort/ort.wasm.min.mjs');
}

/**
 * Create a plain ORT-web session; returns its id.
 * @param {string} build 'wasm' or 'webgpu'
 * @param {Uint8Array} bytes the model
 * @param {any} [device] GPUDevice for webgpu (ortweb's, so both sides use one device)
 * @param {boolean} [gpuOutputs] leave outputs on the GPU
 */
export async function createSession(build, bytes, device = null, gpuOutputs = false) {
  const ort = await ortModule(build);
  /** @type {any} */
  const options = { executionProviders: build === 'webgpu' ? [{ name: 'webgpu', device }] : ['wasm'] };
  if (gpuOutputs) options.preferredOutputLocation = 'gpu-buffer';
  // Copy: the caller's bytes may be a view on Pyodide's heap, which can detach.
  const session = await ort.InferenceSession.create(bytes.slice(), options);
  const id = nextId++;
  sessions.set(id, { ort, session });
  return id;
}

/**
 * Register the ORT session behind an ortweb session handle; returns its id here.
 * Timing the very session ortweb runs leaves nothing but the bridge between the two
 * figures (two sessions of one model can differ by several percent on their own).
 * @param {number} handle an ortweb bridge session handle
 */
export async function adoptSession(handle) {
  const { ortSession } = await import('/bridge/sessions.js');
  const id = nextId++;
  sessions.set(id, ortSession(handle));
  return id;
}

/** @param {number} id */
export async function release(id) {
  const s = sessions.get(id);
  sessions.delete(id);
  if (s) await s.session.release();
}

/**
 * Time `k` runs of a one-input session as an app would write them: a new Tensor
 * over the same data each call, outputs read through `.data`.
 * @param {number} id
 * @param {Float32Array} data
 * @param {number[]} dims
 * @param {number} k
 * @returns {Promise<number>} milliseconds for the k runs
 */
export async function timeRuns(id, data, dims, k) {
  const { ort, session } = /** @type {any} */ (sessions.get(id));
  const name = session.inputNames[0];
  const src = data.slice(); // own copy, off Pyodide's heap
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < k; i++) {
    const out = await session.run({ [name]: new ort.Tensor('float32', src, dims) });
    for (const v of Object.values(out)) sink += v.data.length;
  }
  const ms = performance.now() - t0;
  if (sink < 0) throw new Error('unreachable');
  return ms;
}

/** @type {Map<number, any>} */
const engines = new Map();

/**
 * Register the engine session (tract's, wonnx's) behind an ortweb session handle;
 * returns its id here (ORT-web's sessions go through adoptSession).
 * @param {number} handle an ortweb bridge session handle
 */
export async function adoptEngine(handle) {
  const { engineSession } = await import('/bridge/sessions.js');
  const id = nextId++;
  engines.set(id, engineSession(handle));
  return id;
}

/**
 * Time `k` runs of a one-input tract or wonnx session as a plain-JS app runs that
 * engine: tract through its worker's own `predict` message (what tractjs's
 * `model.predict` posts), wonnx through `Session.run` with a new `Input` each call.
 * @param {number} id from adoptEngine
 * @param {Float32Array} data
 * @param {number[]} dims
 * @param {number} k
 * @returns {Promise<number>} milliseconds for the k runs
 */
export async function timeEngineRuns(id, data, dims, k) {
  const s = engines.get(id);
  const src = data.slice(); // own copy, off Pyodide's heap
  const name = s.inputs[0].name;
  let sink = 0;
  const t0 = performance.now();
  if (s.provider === 'tract') {
    const { worker, id: modelId } = s.loaded;
    for (let i = 0; i < k; i++) {
      const out = await worker.call('predict', { modelId, tensors: [{ data: src, shape: dims }] });
      for (const t of out) sink += t.data.length;
    }
  } else if (s.provider === 'wonnx') {
    for (let i = 0; i < k; i++) {
      const input = new s.wonnx.Input();
      input.insert(name, src);
      const out = await s.session.run(input);
      input.free();
      for (const v of (out instanceof Map ? out.values() : Object.values(out))) sink += v.length;
    }
  } else {
    throw new Error(`timeEngineRuns: no plain-JS run for ${s.provider}`);
  }
  const ms = performance.now() - t0;
  if (sink < 0) throw new Error('unreachable');
  return ms;
}

/**
 * The files a session's engine downloaded before its first run, and their bytes as
 * served: ORT-web's build (its module, glue and wasm) or the engine's own files.
 * @param {number} handle an ortweb bridge session handle
 * @returns {Promise<{files: string[], bytes: number}>}
 */
export async function engineBytes(handle) {
  const { engineSession } = await import('/bridge/sessions.js');
  const { BUILDS, buildFiles, config } = await import('/bridge/runtime.js');
  const { ENGINE_PINS } = await import('/bridge/engine_files.js');
  const s = engineSession(handle);
  // An ORT-web session's build, or another engine's pinned files, where
  // engine_files.js fetches them.
  const files = s.build in BUILDS ? Object.values(buildFiles(s.build))
    : Object.keys(ENGINE_PINS).filter((rel) => rel.startsWith(`${s.build}/`))
      .map((rel) => config.enginesBaseURL + rel);
  let bytes = 0;
  for (const url of files) {
    const response = await fetch(url, { cache: 'force-cache' });
    if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
    bytes += (await response.arrayBuffer()).byteLength;
  }
  // Paths, not URLs: the same form for every engine, whatever the page's origin.
  return { files: files.map((url) => new URL(url, location.href).pathname), bytes };
}

/** Source and destination arrays kept between calls, by byte size. */
const copyPairs = new Map();

/**
 * Time `k` copies of `bytes` bytes with `Float32Array.set` into an array allocated
 * (and touched) before: the memcpy-class anchor for tensor transfer.
 * @param {number} bytes
 * @param {number} k
 * @returns {number} milliseconds for the k copies
 */
export function timeSet(bytes, k) {
  let pair = copyPairs.get(bytes);
  if (!pair) {
    const src = new Float32Array(bytes / 4);
    for (let i = 0; i < src.length; i += 1024) src[i] = i;
    const dst = new Float32Array(bytes / 4);
    dst.set(src); // first touch outside the timing, as ortweb's pool does
    pair = { src, dst };
    copyPairs.set(bytes, pair);
  }
  const t0 = performance.now();
  for (let i = 0; i < k; i++) pair.dst.set(pair.src);
  return performance.now() - t0;
}

/**
 * Time `k` passes of the two-model chain A → B on WebGPU, plain JS.
 * `gpu`: x already in a GPU buffer, A's output stays on the GPU and feeds B, B's
 * output is read back. Otherwise: x uploaded from the CPU, A's output downloaded
 * and B fed from the CPU copy (the CPU round trip).
 * @param {number} idA session A (gpu-buffer outputs when `gpu`)
 * @param {number} idB session B (CPU outputs)
 * @param {any} x Float32Array (CPU) or GPUBuffer (gpu)
 * @param {number[]} dims
 * @param {number} k
 * @param {boolean} gpu
 * @returns {Promise<number>} milliseconds for the k passes
 */
export async function timeChain(idA, idB, x, dims, k, gpu) {
  const a = /** @type {any} */ (sessions.get(idA));
  const b = /** @type {any} */ (sessions.get(idB));
  const ort = a.ort;
  const src = gpu ? x : x.slice();
  let sink = 0;
  const t0 = performance.now();
  for (let i = 0; i < k; i++) {
    const xt = gpu
      ? ort.Tensor.fromGpuBuffer(src, { dataType: 'float32', dims })
      : new ort.Tensor('float32', src, dims);
    const outA = await a.session.run({ [a.session.inputNames[0]]: xt });
    const y = outA[a.session.outputNames[0]];
    const feedB = gpu ? y : new ort.Tensor('float32', y.data, dims);
    const outB = await b.session.run({ [b.session.inputNames[0]]: feedB });
    sink += outB[b.session.outputNames[0]].data.length;
    if (gpu) y.dispose();
  }
  const ms = performance.now() - t0;
  if (sink < 0) throw new Error('unreachable');
  return ms;
}

/**
 * A GPU buffer holding `data` on `device` (STORAGE, for feeding ORT).
 * @param {any} device
 * @param {Float32Array} data
 */
export function gpuBufferOf(device, data) {
  // GPUBufferUsage.STORAGE | COPY_SRC | COPY_DST
  const buffer = device.createBuffer({ size: data.byteLength, usage: 0x80 | 0x04 | 0x08 });
  device.queue.writeBuffer(buffer, 0, data);
  return buffer;
}

/**
 * Resource timing of this page: bytes fetched (encoded body sizes) and requests.
 */
export function resourceBytes() {
  let bytes = 0;
  let count = 0;
  for (const e of /** @type {PerformanceResourceTiming[]} */ (performance.getEntriesByType('resource'))) {
    bytes += e.encodedBodySize || e.transferSize || 0;
    count += 1;
  }
  return { bytes, count };
}

/**
 * Time `k` round trips of `data` to a worker that posts each message straight back,
 * in the form of the bridge's `predict` message to tract's worker (structured clones
 * both ways): what running an engine in a worker costs per call, without the engine.
 * @param {Float32Array} data
 * @param {number} k
 * @returns {Promise<number>} milliseconds for the k round trips
 */
export async function timeWorkerHop(data, k) {
  const url = URL.createObjectURL(new Blob(['onmessage = (e) => postMessage(e.data);'],
    { type: 'text/javascript' }));
  const worker = new Worker(url);
  const src = data.slice(); // own copy, off Pyodide's heap
  /** @param {any} msg */
  const hop = (msg) => new Promise((resolve) => {
    worker.onmessage = (e) => resolve(e.data);
    worker.postMessage(msg);
  });
  try {
    /** @param {number} i */
    const message = (i) => ({ type: 'predict', uid: `hop-${i}`,
      body: { modelId: 1, tensors: [{ data: src, shape: [src.length] }] } });
    for (let i = 0; i < 20; i++) await hop(message(i));
    let sink = 0;
    const t0 = performance.now();
    for (let i = 0; i < k; i++) {
      const out = await hop(message(i));
      sink += out.body.tensors[0].data.length;
    }
    const ms = performance.now() - t0;
    if (sink < 0) throw new Error('unreachable');
    return ms;
  } finally {
    worker.terminate();
    URL.revokeObjectURL(url);
  }
}
