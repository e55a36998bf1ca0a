// @ts-check
/**
 * The wonnx engine's sessions (@webonnx/wonnx-wasm 0.5.1: WebGPU compute shaders
 * compiled when the session is created), imported when a session first tries `wonnx`
 * (engine_wonnx.js).
 *
 * wonnx takes float32 inputs only and reports outputs as plain number arrays
 * without shapes: it needs static shapes, so the shapes come from the model's own
 * declaration (Python checks, before anything loads, that every input and output
 * has one, and every intermediate value a declared shape: py/ortweb/_engines.py).
 * @module wonnx_session
 */

import { BridgeError } from './errors.js';

/** @typedef {typeof import('./engine_files.js')} EngineFiles */

/** engine_files.js, handed over by `create` (lazy_engine.js: why not imported). */
let files = /** @type {EngineFiles|null} */ (null);

/** @type {Promise<any>|null} */
let loaded = null;

/** The URLs wonnx's glue was imported from: the frames of its traps name them. */
const glueURLs = new Set();

/** wonnx's module, imported and initialised once per page. */
function loadWonnx() {
  if (!loaded) {
    // Both files checked against their pins (engine_files.js); what is imported and
    // instantiated are the checked bytes.
    const { engineFile, scriptURL } = /** @type {EngineFiles} */ (files);
    loaded = Promise.all([engineFile('wonnx/wonnx.js'), engineFile('wonnx/wonnx_bg.wasm')])
      .then(async ([js, wasm]) => {
        const url = scriptURL(js);
        glueURLs.add(url);
        try {
          const wonnx = await import(/* @vite-ignore */ url);
          await wonnx.default(wasm);
          return wonnx;
        } finally {
          URL.revokeObjectURL(url);
        }
      });
    // A failed import is not kept: the next session tries again.
    loaded.catch(() => { loaded = null; });
  }
  return loaded;
}

/**
 * How long wonnx may take to load a model, or to run it, before ortweb takes it for
 * hung, in seconds: wonnx 0.5.1 never settles on some models, and an instance that
 * hung leaves every later session of that instance hanging too. A page may set
 * `globalThis.ortwebConfig = {wonnxTimeLimitS: ...}`.
 */
const TIME_LIMIT_S = 30;

/** The time limit in force: the page's `ortwebConfig.wonnxTimeLimitS`, or {@link TIME_LIMIT_S}. */
function timeLimitS() {
  const own = /** @type {any} */ (globalThis).ortwebConfig?.wonnxTimeLimitS;
  return typeof own === 'number' && own > 0 ? own : TIME_LIMIT_S;
}

/** The rejects of the wonnx calls that have not settled (see {@link guarded}). */
const pending = new Set();

/**
 * A panic inside wonnx traps in a task of its own (its futures run from microtasks),
 * so the call waiting for it never settles; the trap reaches the page as an unhandled
 * rejection, whose frames name wonnx's glue. It fails every pending call instead, and
 * the instance goes (its memory is not to be trusted after a panic).
 * @param {any} event a PromiseRejectionEvent or an ErrorEvent
 */
function onUncaught(event) {
  const err = event?.reason ?? event?.error;
  const stack = String(err?.stack ?? '');
  if (!pending.size || !(err instanceof WebAssembly.RuntimeError)
      || ![...glueURLs].some((url) => stack.includes(url))) return;
  event.preventDefault();
  loaded = null;
  for (const reject of [...pending]) {
    reject(new BridgeError('EngineError', `wonnx panicked (${err.message}; its own message is on the browser console): it cannot run this model; the next wonnx session starts on a fresh instance of the engine`));
  }
}

/** The page's `Error.stackTraceLimit` while wonnx calls are pending, else null. */
let savedStackLimit = /** @type {number|null} */ (null);

/**
 * Listen for wonnx's traps while calls are pending. A trap's stack holds wasm frames
 * first and wonnx's glue below them, past V8's default of 10 frames: the limit is
 * raised for that time.
 * @param {boolean} on
 */
function watchTraps(on) {
  const E = /** @type {any} */ (Error);
  for (const type of ['unhandledrejection', 'error']) {
    if (on) globalThis.addEventListener?.(type, onUncaught);
    else globalThis.removeEventListener?.(type, onUncaught);
  }
  if (on) {
    savedStackLimit = E.stackTraceLimit;
    E.stackTraceLimit = Math.max(Number(E.stackTraceLimit) || 0, 200);
  } else if (savedStackLimit !== null) {
    if (E.stackTraceLimit === 200) E.stackTraceLimit = savedStackLimit;
    savedStackLimit = null;
  }
}

/**
 * `promise`, or a BridgeError once wonnx has panicked or the time limit has passed
 * without it settling. Then the wonnx instance is dropped, so that the next session
 * loads a fresh one, and what `promise` may still bring is handed to `late`.
 * @template T
 * @param {Promise<T>} promise @param {string} what @param {(value: T) => void} late
 * @returns {Promise<T>}
 */
function guarded(promise, what, late) {
  const seconds = timeLimitS();
  /** @type {ReturnType<typeof setTimeout>|undefined} */
  let timer;
  /** @type {(err: any) => void} */
  let fail = () => {};
  const failed = new Promise((_, reject) => {
    fail = (err) => {
      promise.then(late, () => {});
      reject(err);
    };
    timer = setTimeout(() => {
      loaded = null;
      fail(new BridgeError('EngineHung', `wonnx did not finish ${what} within ${seconds} s: it hangs on some models (see Known upstream problems); the next wonnx session starts on a fresh instance of the engine (globalThis.ortwebConfig.wonnxTimeLimitS sets the limit)`));
    }, seconds * 1000);
  });
  if (!pending.size) watchTraps(true);
  pending.add(fail);
  return /** @type {Promise<T>} */ (Promise.race([promise, failed]).finally(() => {
    clearTimeout(timer);
    pending.delete(fail);
    if (!pending.size) watchTraps(false);
  }));
}

/** @param {unknown} err wonnx's SessionError, or anything else thrown */
function messageOf(err) {
  if (err instanceof Error) return err.message;
  return String(/** @type {any} */ (err)?.toString?.() ?? err);
}

class WonnxSession {
  /**
   * @param {any} wonnx the module
   * @param {any} session wonnx's Session
   * @param {import('./engines.js').ValueDescription[]} inputs
   * @param {import('./engines.js').ValueDescription[]} outputs
   */
  constructor(wonnx, session, inputs, outputs) {
    this.provider = 'wonnx';
    this.build = 'wonnx';
    /** @type {any} */
    this.device = null;
    /** @type {any} */
    this.placement = null;
    this.wonnx = wonnx;
    this.session = session;
    this.inputs = inputs;
    this.outputs = outputs;
    /** Why this session cannot run any more (a run that hung or panicked), or ''. */
    this.broken = '';
  }

  /**
   * @param {import('./engines.js').FeedSpec[]} feeds
   * @param {import('./engines.js').FetchSpec[]} fetches
   */
  async run(feeds, fetches) {
    if (this.broken) throw new BridgeError('EngineError', `this wonnx session failed in an earlier run (${this.broken}); create a new session`);
    const input = new this.wonnx.Input();
    let result;
    let abandoned = false;
    try {
      for (const feed of feeds) {
        if (feed.value !== undefined && feed.value !== null) {
          throw new BridgeError('NotImplemented', `the wonnx engine keeps its GPU buffers to itself and takes no GPU values (input '${feed.name}'); feed a numpy array`);
        }
        if (feed.type !== 'float32') {
          throw new BridgeError('NotImplemented', `the wonnx engine (0.5.1) takes float32 inputs only, not ${feed.type} (input '${feed.name}')`);
        }
        input.insert(feed.name, feed.data);
      }
      try {
        result = await guarded(this.session.run(input), 'a run', () => input.free());
      } catch (err) {
        if (err instanceof BridgeError) {
          // It hung or panicked: wonnx still holds the input and the session, and both
          // go with the instance.
          abandoned = true;
          this.broken = err.message;
          throw err;
        }
        throw new BridgeError('EngineError', `wonnx: ${messageOf(err)}`);
      }
    } finally {
      if (!abandoned) input.free();
    }
    return fetches.map((f) => {
      if (f.value !== null && f.value !== undefined) {
        throw new BridgeError('NotImplemented', `the wonnx engine cannot write into GPU values (output '${f.name}')`);
      }
      const values = result instanceof Map ? result.get(f.name) : result[f.name];
      const declared = this.outputs.find((o) => o.name === f.name);
      const dims = /** @type {number[]} */ (declared?.shape ?? []);
      return { name: f.name, type: 'float32', dims, data: Float32Array.from(values), value: null, location: 'cpu' };
    });
  }

  async release() {
    // A session that hung or panicked is left to its abandoned instance: freeing it
    // there, in the middle of its run, would break that instance's memory for nothing.
    if (!this.broken) this.session?.free();
    this.session = null;
  }
}

/**
 * @param {Uint8Array} bytes
 * @param {string} _provider
 * @param {any} options ORT-web's session options; wonnx reads only `ortwebGraph`
 * @param {any} _epOptions
 * @param {EngineFiles} engineFiles
 */
export async function create(bytes, _provider, options, _epOptions, engineFiles) {
  files = engineFiles;
  const graph = options?.ortwebGraph;
  if (!graph) throw new BridgeError('InvalidArgument', 'the wonnx engine needs the inputs and outputs ortweb read from the model (ortwebGraph)');
  let wonnx;
  try {
    wonnx = await loadWonnx();
  } catch (err) {
    // Its files missing or changed: this page cannot run the engine (a skip, so the
    // policy falls back, and ProviderUnavailable names it when nothing is left).
    return { skip: messageOf(err) };
  }
  let session;
  try {
    session = await guarded(wonnx.Session.fromBytes(bytes), 'loading the model',
      (late) => late?.free());
  } catch (err) {
    if (err instanceof BridgeError) throw err;
    throw new BridgeError('EngineError', `wonnx could not load the model: ${messageOf(err)}`);
  }
  return new WonnxSession(wonnx, session, graph.inputs, graph.outputs);
}
