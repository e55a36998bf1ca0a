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

/** wonnx's module, imported and initialised once per page. */
function loadWonnx() {
  if (!loaded) {
    // Both files checked against their pins (engine_files.js); what is imported and
    // instantiated are the checked bytes.
    const { engineFile, scriptURL } = /** @type {EngineFiles} */ (files);
    loaded = Promise.all([engineFile('wonnx/wonnx.js'), engineFile('wonnx/wonnx_bg.wasm')])
      .then(async ([js, wasm]) => {
        const url = scriptURL(js);
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
  }

  /**
   * @param {import('./engines.js').FeedSpec[]} feeds
   * @param {import('./engines.js').FetchSpec[]} fetches
   */
  async run(feeds, fetches) {
    const input = new this.wonnx.Input();
    let result;
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
        result = await this.session.run(input);
      } catch (err) {
        throw new BridgeError('EngineError', `wonnx: ${messageOf(err)}`);
      }
    } finally {
      input.free();
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
    this.session?.free();
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
    session = await wonnx.Session.fromBytes(bytes);
  } catch (err) {
    throw new BridgeError('EngineError', `wonnx could not load the model: ${messageOf(err)}`);
  }
  return new WonnxSession(wonnx, session, graph.inputs, graph.outputs);
}
