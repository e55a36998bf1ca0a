// @ts-check
/**
 * The tract engine's sessions (tractjs 0.4.0: tract compiled to WebAssembly, CPU
 * only), imported when a session first tries `tract` (engine_tract.js).
 *
 * tractjs runs tract in a Web Worker. Its main-thread wrapper is not used: it starts
 * one worker for the whole page when imported, never notices that worker die (its
 * calls would wait for ever), and its `destroy` only forgets the model (tract's
 * memory stays). The bridge starts tractjs's own worker script itself (set-up takes
 * it out of tractjs's bundle, build.py) and speaks its message protocol: one worker
 * per session, so `release` terminates it and gives all its memory back, and a worker
 * that fails or dies costs its session one reload, not the page.
 * @module tract_session
 */

import { BridgeError } from './errors.js';

/** The tensor types tractjs passes (its `DataType`): no int64, bool, float16 or string. */
const TYPES = /** @type {Object<string, any>} */ ({
  float32: Float32Array, float64: Float64Array, int8: Int8Array, uint8: Uint8Array,
  int16: Int16Array, uint16: Uint16Array, int32: Int32Array, uint32: Uint32Array,
});

/** @param {any} data */
function typeOf(data) {
  for (const [name, Ctor] of Object.entries(TYPES)) if (data instanceof Ctor) return name;
  return String(data?.constructor?.name ?? typeof data);
}

/** @param {unknown} body what the worker posted as an error */
function messageOf(body) {
  if (body instanceof Error) return body.message;
  return typeof body === 'string' ? body : String(body);
}

/** @typedef {typeof import('./engine_files.js')} EngineFiles */

/** engine_files.js, handed over by `create` (lazy_engine.js: why not imported). */
let files = /** @type {EngineFiles|null} */ (null);

/** @type {Promise<string>|null} */
let script = null;

/** A URL of the worker script, fetched and checked once per page (engine_files.js). */
function workerScript() {
  if (!script) {
    const { engineFile, scriptURL } = /** @type {EngineFiles} */ (files);
    script = engineFile('tract/tract-worker.js').then(scriptURL);
    // A missing or changed file is not kept: the next session fetches again.
    script.catch(() => { script = null; });
  }
  return script;
}

/** One tractjs worker and the calls waiting on it. */
class TractWorker {
  /** @param {string} url the worker script (workerScript) */
  constructor(url) {
    /** @type {Map<string, {resolve: (v: any) => void, reject: (e: any) => void}>} */
    this.pending = new Map();
    /** Why the worker is unusable ('' while it is fine). */
    this.broken = '';
    this.nextId = 0;
    this.worker = new Worker(url);
    this.worker.addEventListener('message', (e) => {
      const waiting = this.pending.get(e.data?.uid);
      if (!waiting) return;
      this.pending.delete(e.data.uid);
      if (e.data.type === 'error') waiting.reject(new Error(messageOf(e.data.body)));
      else waiting.resolve(e.data.body);
    });
    // An uncaught error in the worker, a script that did not load, a message it
    // could not read: nothing it is working on will answer.
    this.worker.addEventListener('error', (e) => {
      e.preventDefault();
      this.fail(`the tract worker failed: ${e.message || 'its script did not start'}`);
    });
    this.worker.addEventListener('messageerror', () => this.fail('the tract worker could not read a message'));
  }

  /** @param {string} reason */
  fail(reason) {
    if (!this.broken) this.broken = reason;
    this.worker.terminate();
    for (const waiting of this.pending.values()) waiting.reject(new BridgeError('EngineFailed', this.broken));
    this.pending.clear();
  }

  /**
   * @param {string} type 'load', 'predict', 'metadata' or 'destroy'
   * @param {any} body
   */
  call(type, body) {
    if (this.broken) return Promise.reject(new BridgeError('EngineFailed', this.broken));
    const uid = `ortweb-${this.nextId++}`;
    return new Promise((resolve, reject) => {
      this.pending.set(uid, { resolve, reject });
      this.worker.postMessage({ type, body, uid });
    });
  }

  terminate() {
    this.broken = 'the session was released';
    this.worker.terminate();
    this.pending.clear();
  }
}

/**
 * Load `bytes` into a new worker.
 * @param {Uint8Array} bytes
 * @param {boolean} optimize
 */
async function loadWorker(bytes, optimize) {
  const worker = new TractWorker(await workerScript());
  try {
    // The worker gets its own copy (structured clone); `bytes` stays the caller's.
    const id = await worker.call('load', { data: bytes, options: { format: 'onnx', optimize, inputFacts: {} } });
    return { worker, id };
  } catch (err) {
    worker.terminate();
    throw err instanceof BridgeError ? err : new BridgeError('EngineError', `tract could not load the model: ${messageOf(err)}`);
  }
}

class TractSession {
  /**
   * @param {Uint8Array} bytes the model, kept to reload it after a failure
   * @param {boolean} optimize
   * @param {{worker: TractWorker, id: number}} loaded
   * @param {import('./engines.js').ValueDescription[]} inputs
   * @param {import('./engines.js').ValueDescription[]} outputs
   */
  constructor(bytes, optimize, loaded, inputs, outputs) {
    this.provider = 'tract';
    this.build = 'tract';
    /** @type {any} */
    this.device = null;
    /** @type {any} */
    this.placement = null;
    this.bytes = bytes;
    this.optimize = optimize;
    /** @type {{worker: TractWorker, id: number}|null} */
    this.loaded = loaded;
    this.inputs = inputs;
    this.outputs = outputs;
  }

  /**
   * @param {import('./engines.js').FeedSpec[]} feeds
   * @param {import('./engines.js').FetchSpec[]} fetches
   */
  async run(feeds, fetches) {
    const byName = new Map(feeds.map((f) => [f.name, f]));
    const tensors = this.inputs.map((input) => {
      const feed = byName.get(input.name);
      if (!feed) throw new BridgeError('InvalidArgument', `tract needs every input; '${input.name}' was not fed`);
      if (feed.value !== undefined && feed.value !== null) {
        throw new BridgeError('NotImplemented', `the tract engine runs on the CPU and takes no GPU values (input '${feed.name}'); feed a numpy array`);
      }
      if (!TYPES[/** @type {string} */ (feed.type)]) {
        throw new BridgeError('NotImplemented', `the tract engine (tractjs 0.4.0) cannot take ${feed.type} tensors (input '${feed.name}')`);
      }
      return { data: feed.data, shape: feed.dims };
    });
    if (!this.loaded || this.loaded.worker.broken) {
      // The worker failed in an earlier run: a fresh one, from the model's bytes.
      this.loaded?.worker.terminate();
      this.loaded = null;
      this.loaded = await loadWorker(this.bytes, this.optimize);
    }
    const { worker, id } = this.loaded;
    let results;
    try {
      results = await worker.call('predict', { modelId: id, tensors });
    } catch (err) {
      // A panic inside tract's wasm leaves its state unknown: never run it again.
      if (!worker.broken) worker.fail(`tract failed in an earlier run: ${messageOf(err)}`);
      throw err instanceof BridgeError ? err : new BridgeError('EngineError', `tract: ${messageOf(err)}`);
    }
    return fetches.map((f) => {
      if (f.value !== null && f.value !== undefined) {
        throw new BridgeError('NotImplemented', `the tract engine runs on the CPU and cannot write into GPU values (output '${f.name}')`);
      }
      const index = this.outputs.findIndex((o) => o.name === f.name);
      const tensor = results[index];
      return { name: f.name, type: typeOf(tensor.data), dims: Array.from(tensor.shape, Number), data: tensor.data, value: null, location: 'cpu' };
    });
  }

  async release() {
    this.loaded?.worker.terminate();
    this.loaded = null;
  }
}

/**
 * @param {Uint8Array} bytes
 * @param {string} _provider
 * @param {any} options ORT-web's session options; tract reads only `ortwebGraph`
 * @param {any} _epOptions
 * @param {EngineFiles} engineFiles
 */
export async function create(bytes, _provider, options, _epOptions, engineFiles) {
  files = engineFiles;
  const graph = options?.ortwebGraph;
  if (!graph) throw new BridgeError('InvalidArgument', 'the tract engine needs the inputs and outputs ortweb read from the model (ortwebGraph)');
  /** @type {import('./engines.js').ValueDescription[]} */
  const inputs = graph.inputs;
  // tract optimises a model only when every input shape is known; with a free dim it
  // runs the model as declared.
  const optimize = inputs.every((i) => Array.isArray(i.shape) && i.shape.every((d) => typeof d === 'number' && d >= 0));
  try {
    await workerScript();
  } catch (err) {
    // Its worker script missing or changed: this page cannot run the engine (a skip,
    // so the policy falls back, and ProviderUnavailable names it when nothing is left).
    return { skip: messageOf(err) };
  }
  const copy = bytes.slice();
  const loaded = await loadWorker(copy, optimize);
  return new TractSession(copy, optimize, loaded, inputs, graph.outputs);
}
