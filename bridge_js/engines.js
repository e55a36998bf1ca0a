// @ts-check
/**
 * The engine seam: every inference engine the bridge can run, behind one interface.
 *
 * An engine serves one or more provider names (onnxruntime-web: `webgpu`, `wasm`;
 * tract: `tract`; wonnx: `wonnx`). sessions.js knows engines only through this
 * table: a new engine is one adapter module and one entry here (and its Python
 * description, py/ortweb/_engines.py).
 * @module engines
 */

import { ortEngine } from './engine_ort.js';
import { tractEngine } from './engine_tract.js';
import { wonnxEngine } from './engine_wonnx.js';

/**
 * @typedef {object} FeedSpec
 * @property {string} name
 * @property {string} [type]   ORT type (CPU feeds)
 * @property {number[]} [dims]  shape (CPU feeds)
 * @property {any} [data]       typed array or string[] (CPU feeds)
 * @property {number} [value]  handle of a GPU value (values.js)
 */

/**
 * @typedef {object} FetchSpec
 * @property {string} name
 * @property {number|null} value handle of a pre-allocated GPU value, or null
 */

/**
 * @typedef {object} ValueDescription
 * @property {string} name
 * @property {string|null} type  ORT's type name ('float32', ...)
 * @property {Array<number|string>|null} shape
 */

/**
 * A session of one engine. `run` resolves to one output per fetch, in order:
 * `{name, type, dims, data, value: null, location: 'cpu'}` for data on the CPU, or
 * `{name, type, dims, value, location: 'gpu-buffer', fresh}` for a GPU value.
 * @typedef {object} EngineSession
 * @property {string} provider  the provider name it runs on
 * @property {string} build     what it loaded: an ORT-web build, 'tract' or 'wonnx'
 * @property {any} device       the GPUDevice its values live on, or null
 * @property {any} placement    nodes placed on the CPU (ORT's WebGPU EP), or null
 * @property {ValueDescription[]} inputs
 * @property {ValueDescription[]} outputs
 * @property {(feeds: FeedSpec[], fetches: FetchSpec[], runOptions: object|null) => Promise<any[]>} run
 * @property {() => Promise<void>} release
 */

/**
 * @typedef {object} Engine
 * @property {string} name        'ort', 'tract', 'wonnx'
 * @property {string[]} providers the provider names it serves
 * @property {(provider: string) => Promise<string>} skipReason  why it cannot be
 *   tried in this page ('' when it can), before any byte of it is downloaded
 * @property {(provider: string) => string} buildFor  what `create` will load
 * @property {(bytes: Uint8Array, provider: string, options: any, epOptions: any) => Promise<EngineSession|{skip: string}>} create
 *   `options` are ORT-web's session options; `options.ortwebGraph` (inputs and
 *   outputs as ortweb read them from the model) is for engines that report none
 */

/** @type {Engine[]} */
export const ENGINES = [ortEngine, tractEngine, wonnxEngine];

/** @type {Map<string, Engine>} */
const BY_PROVIDER = new Map(ENGINES.flatMap((e) => e.providers.map((p) => [p, e])));

/** Every provider name some engine serves, in the table's order. */
export const PROVIDERS = [...BY_PROVIDER.keys()];

/**
 * The engine serving `provider`, or null.
 * @param {string} provider
 */
export function engineFor(provider) {
  return BY_PROVIDER.get(provider) ?? null;
}
