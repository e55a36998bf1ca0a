// @ts-check
/**
 * Sessions: create from bytes trying providers in order, run, release.
 *
 * Python never holds an ORT session object: it holds an integer handle, so a
 * session has exactly one owner and `release` is safe to call twice.
 * @module sessions
 */

import { BridgeError } from './errors.js';
import { pageQueue } from './queue.js';
import { buildFor, loadBuild, probeWebGpu } from './runtime.js';
import { decodeTensor, makeTensor } from './tensors.js';

/**
 * @typedef {object} SessionEntry
 * @property {any} session  the ORT InferenceSession
 * @property {any} ort      the ORT module that created it
 * @property {string} provider  'wasm' or 'webgpu'
 * @property {string} build     key of runtime.BUILDS
 */

/** @type {Map<number, SessionEntry>} */
const sessions = new Map();
let nextHandle = 1;

/** Number of sessions alive in this page. */
export function liveSessions() {
  return sessions.size;
}

/**
 * @param {any} meta ORT's inputMetadata/outputMetadata entry
 */
function describeValue(meta) {
  if (!meta.isTensor) return { name: meta.name, type: null, shape: null };
  return { name: meta.name, type: meta.type, shape: Array.from(meta.shape ?? [], (d) => (typeof d === 'bigint' ? Number(d) : d)) };
}

/**
 * Why `provider` cannot even be tried here, or '' when it can.
 * @param {string} provider
 */
async function skipReason(provider) {
  if (provider === 'wasm') return '';
  if (provider === 'webgpu') {
    const gpu = await probeWebGpu();
    return gpu.available ? '' : gpu.reason;
  }
  return `unknown execution provider '${provider}' (ortweb knows 'wasm' and 'webgpu')`;
}

/**
 * Types a provider cannot run although it loads the model: ORT-web's WebGPU EP
 * returns zeros for float16 on adapters without `shader-f16` instead of failing.
 * @param {string} provider
 * @param {any} session
 */
async function typeReason(provider, session) {
  if (provider !== 'webgpu') return '';
  const gpu = await probeWebGpu();
  const all = [...(session.inputMetadata ?? []), ...(session.outputMetadata ?? [])];
  const f16 = all.find((m) => m.isTensor && m.type === 'float16');
  if (f16 && !gpu.features.includes('shader-f16')) {
    return `the model has float16 value '${f16.name}' and the WebGPU adapter lacks the 'shader-f16' feature`;
  }
  return '';
}

/**
 * Create a session, trying `providers` in order.
 * @param {Uint8Array} bytes the model
 * @param {string[]} providers e.g. ['webgpu', 'wasm']
 * @param {object} options ORT SessionOptions, without executionProviders
 * @returns {Promise<object>} handle, provider, build, skipped reasons, inputs, outputs
 */
export function createSession(bytes, providers, options) {
  return pageQueue.run(async () => {
    /** @type {{provider: string, reason: string}[]} */
    const skipped = [];
    /** @type {unknown} */
    let lastError = null;
    for (const provider of providers) {
      const reason = await skipReason(provider);
      if (reason) {
        skipped.push({ provider, reason });
        continue;
      }
      const build = buildFor(provider);
      let session;
      try {
        const ort = await loadBuild(build);
        // ORT may detach or keep the buffer it is given: hand it a copy of its own.
        session = await ort.InferenceSession.create(bytes.slice(), { ...options, executionProviders: [provider] });
        const typeProblem = await typeReason(provider, session);
        if (typeProblem) {
          await session.release();
          skipped.push({ provider, reason: typeProblem });
          continue;
        }
        const handle = nextHandle++;
        sessions.set(handle, { session, ort, provider, build });
        return {
          handle,
          provider,
          build,
          skipped,
          inputs: session.inputMetadata.map(describeValue),
          outputs: session.outputMetadata.map(describeValue),
        };
      } catch (err) {
        lastError = err;
        skipped.push({ provider, reason: err instanceof Error ? err.message : String(err) });
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
 * @returns {SessionEntry}
 */
function entry(handle) {
  const found = sessions.get(handle);
  if (!found) throw new BridgeError('SessionClosed', `session ${handle} was released`);
  return found;
}

/**
 * Run a session on CPU feeds.
 * @param {number} handle
 * @param {string[]} names input names
 * @param {string[]} types ORT type per input
 * @param {number[][]} dims shape per input
 * @param {any[]} datas typed array (or string[]) per input
 * @param {string[]} outputNames outputs to fetch, in order
 * @param {object|null} [runOptions] ORT RunOptions
 */
export function runSession(handle, names, types, dims, datas, outputNames, runOptions = null) {
  return pageQueue.run(async () => {
    const { session, ort } = entry(handle);
    /** @type {Object<string, any>} */
    const feeds = {};
    for (let i = 0; i < names.length; i++) {
      feeds[names[i]] = makeTensor(ort, types[i], datas[i], dims[i]);
    }
    const results = await session.run(feeds, outputNames, runOptions ?? undefined);
    return outputNames.map((name) => decodeTensor(name, results[name]));
  });
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
    await found.session.release();
    return true;
  });
}

/**
 * The provider and build a handle runs on.
 * @param {number} handle
 */
export function sessionInfo(handle) {
  const { provider, build } = entry(handle);
  return { provider, build };
}
