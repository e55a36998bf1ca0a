// @ts-check
/**
 * Sessions: create from bytes trying providers in order, run, release, on the
 * engine that serves each provider (engines.js).
 *
 * Python never holds an engine's session object: it holds an integer handle, so a
 * session has exactly one owner and `release` is safe to call twice.
 * @module sessions
 */

import { engineFor, PROVIDERS } from './engines.js';
import { BridgeError } from './errors.js';
import { ortwebDevice, uploadBuffer } from './gpu.js';
import { pageQueue } from './queue.js';
import { config } from './runtime.js';
import { bytesOf, recycle, viewAs } from './tensors.js';
import { byteLength, entryBytes, readValue, registerValue } from './values.js';

/** @typedef {import('./engines.js').EngineSession} EngineSession */

/** @type {Map<number, EngineSession>} */
const sessions = new Map();
let nextHandle = 1;

/** Number of sessions alive in this page. */
export function liveSessions() {
  return sessions.size;
}

/**
 * Why `provider` cannot even be tried here, or '' when it can.
 * @param {string} provider
 */
export async function skipReason(provider) {
  const engine = engineFor(provider);
  if (!engine) return `unknown execution provider '${provider}' (ortweb knows ${PROVIDERS.map((p) => `'${p}'`).join(', ')})`;
  return engine.skipReason(provider);
}

/**
 * Every provider some engine serves → why it cannot be tried in this page ('' when
 * it can), found without downloading any engine.
 * @returns {Promise<Object<string, string>>}
 */
export async function providerReasons() {
  return Object.fromEntries(await Promise.all(PROVIDERS.map(async (p) => [p, await skipReason(p)])));
}

/**
 * What the first of `providers` that can be tried here loads (an ORT-web build,
 * 'tract', 'wonnx'), the one {@link createSession} tries first; null when none can.
 * @param {string[]} providers
 * @returns {Promise<string|null>}
 */
export async function firstBuild(providers) {
  for (const provider of providers) {
    if (!await skipReason(provider)) return /** @type {any} */ (engineFor(provider)).buildFor(provider);
  }
  return null;
}

/**
 * Create a session, trying `providers` in order, each on the engine that serves it.
 * @param {Uint8Array} bytes the model
 * @param {string[]} providers e.g. ['webgpu', 'wasm']
 * @param {any} allOptions ORT SessionOptions, without executionProviders; its
 *   preferredOutputLocation applies to WebGPU only (wasm outputs are on the CPU);
 *   ortwebProviderOptions (provider → EP options) and ortwebGraph (the model's
 *   inputs and outputs, for engines that report none) are ortweb's, not ORT's
 * @returns {Promise<object>} handle, provider, build, skipped reasons, inputs, outputs
 */
export function createSession(bytes, providers, allOptions) {
  const { ortwebProviderOptions: epOptions = {}, ...options } = allOptions ?? {};
  return pageQueue.run(async () => {
    /** @type {{provider: string, reason: string, kind: string}[]} */
    const skipped = [];
    /** @type {unknown} */
    let lastError = null;
    for (const provider of providers) {
      const reason = await skipReason(provider);
      if (reason) {
        skipped.push({ provider, reason, kind: 'skipped' });
        continue;
      }
      const engine = /** @type {import('./engines.js').Engine} */ (engineFor(provider));
      try {
        const made = await engine.create(bytes, provider, options, epOptions[provider]);
        if ('skip' in made) {
          skipped.push({ provider, reason: made.skip, kind: 'skipped' });
          continue;
        }
        const handle = nextHandle++;
        sessions.set(handle, made);
        return {
          handle,
          provider,
          build: made.build,
          skipped,
          placement: made.placement,
          inputs: made.inputs,
          outputs: made.outputs,
        };
      } catch (err) {
        lastError = err;
        skipped.push({ provider, reason: err instanceof Error ? err.message : String(err), kind: 'failed' });
      }
    }
    const reasons = Object.fromEntries(skipped.map((s) => [s.provider, s.reason]));
    if (lastError) {
      // Every provider that was tried failed: the model itself is the likely
      // culprit, so report the runtime's own error rather than "no provider".
      if (lastError instanceof Error) /** @type {any} */ (lastError).reasons = reasons;
      throw lastError;
    }
    const list = skipped.map((s) => `${s.provider}: ${s.reason}`).join('; ');
    throw new BridgeError('ProviderUnavailable', `no execution provider available (${list || 'none requested'})`, null, reasons);
  });
}

/**
 * @param {number} handle
 * @returns {EngineSession}
 */
function entry(handle) {
  const found = sessions.get(handle);
  if (!found) throw new BridgeError('SessionClosed', `session ${handle} was released`);
  return found;
}

/**
 * The ORT-web module and session behind a handle, for code beside the bridge that
 * must run the very session ortweb runs (`ortweb bench` times it from plain JS, so
 * the two paths differ in nothing but the bridge).
 * @param {number} handle
 * @returns {{ort: any, session: any}}
 */
export function ortSession(handle) {
  const s = /** @type {any} */ (entry(handle));
  return { ort: s.ort, session: s.session };
}

/**
 * The engine session behind a handle (any engine: see engines.js), for the same
 * code beside the bridge: `ortweb bench` times each engine's own run from plain JS.
 * @param {number} handle
 * @returns {EngineSession}
 */
export function engineSession(handle) {
  return entry(handle);
}

/**
 * Run a session. CPU outputs come back as data; GPU outputs as value handles.
 * @param {number} handle
 * @param {import('./engines.js').FeedSpec[]} feeds
 * @param {import('./engines.js').FetchSpec[]} fetches outputs to fetch, in order
 * @param {object|null} [runOptions] ORT RunOptions
 */
export function runSession(handle, feeds, fetches, runOptions = null) {
  return pageQueue.run(async () => {
    const s = entry(handle);
    try {
      return await s.run(feeds, fetches, runOptions);
    } finally {
      // The engine has copied the feeds (into ORT's heap, into a worker's message):
      // their staging arrays can be reused.
      for (const feed of feeds) if (feed.value === undefined || feed.value === null) recycle(/** @type {string} */ (feed.type), feed.data);
    }
  });
}

/**
 * Read a GPU value back (queued: ORT-web throws on a second concurrent getData).
 * @param {number} handle
 * @param {boolean} release
 */
export function readGpuValue(handle, release) {
  return pageQueue.run(async () => {
    const out = await readValue(handle, release, entryBytes);
    return { type: out.type, dims: out.dims, data: viewAs(out.type, out.data) };
  });
}

/**
 * Upload bytes into a new ortweb-owned GPU buffer on the device WebGPU sessions use.
 * @param {string} type
 * @param {number[]} dims
 * @param {any} data typed array (wire type)
 */
export async function uploadValue(type, dims, data) {
  const device = await webgpuDevice();
  const need = byteLength(type, dims);
  if (type === 'float16' && !device.features.has('shader-f16')) {
    throw new BridgeError('ProviderUnavailable', "float16 tensors on WebGPU need the adapter feature 'shader-f16', which this adapter lacks");
  }
  const buffer = uploadBuffer(device, need ? bytesOf(data) : new Uint8Array(0));
  return registerValue({ owner: 'ortweb', type, dims: Array.from(dims), buffer, device });
}

/**
 * The GPUDevice that WebGPU sessions of this page run on.
 */
export async function webgpuDevice() {
  if (config.webgpuBuild === 'native') return ortwebDevice();
  for (const s of sessions.values()) {
    if (s.provider === 'webgpu' && s.device) return s.device;
  }
  throw new BridgeError('ProviderUnavailable', "with the 'jsep' WebGPU build, ORT creates its own GPUDevice: create a WebGPU session first, then ask for the device");
}

/**
 * Release a session; a handle released before is ignored.
 * @param {number} handle
 */
export function releaseSession(handle) {
  return pageQueue.run(async () => {
    const found = sessions.get(handle);
    if (!found) return false;
    sessions.delete(handle);
    await found.release();
    return true;
  });
}
