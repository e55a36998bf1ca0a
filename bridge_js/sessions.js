// @ts-check
/**
 * Sessions: create from bytes trying providers in order, run, release.
 *
 * Python never holds an ORT session object: it holds an integer handle, so a
 * session has exactly one owner and `release` is safe to call twice.
 * @module sessions
 */

import { BridgeError } from './errors.js';
import { checkBuffer, downloadBuffer, ortwebDevice, uploadBuffer, writeBuffer } from './gpu.js';
import { captureConsole, parsePlacement } from './placement.js';
import { pageQueue } from './queue.js';
import { buildFor, config, loadBuild, probeWebGpu } from './runtime.js';
import { bytesOf, decodeTensor, makeTensor, recycle, viewAs } from './tensors.js';
import { byteLength, getValue, readValue, registerValue } from './values.js';

/**
 * @typedef {object} SessionEntry
 * @property {any} session  the ORT InferenceSession
 * @property {any} ort      the ORT module that created it
 * @property {string} provider  'wasm' or 'webgpu'
 * @property {string} build     key of runtime.BUILDS
 * @property {any} device       the GPUDevice ORT runs on (null for wasm)
 * @property {number} logLevel  the severity runs log at (the user's, not the capture's)
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
 * The build that the first of `providers` that can be tried here loads, the one
 * {@link createSession} tries first; null when none can.
 * @param {string[]} providers
 * @returns {Promise<string|null>}
 */
export async function firstBuild(providers) {
  for (const provider of providers) {
    if (!await skipReason(provider)) return buildFor(provider);
  }
  return null;
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

const SEVERITY = /** @type {Object<string, number>} */ ({ V: 0, I: 1, W: 2, E: 3, F: 4 });

/**
 * Print the captured log lines the user's severity level asks for.
 * @param {string[]} lines
 * @param {number} level
 */
function replayLog(lines, level) {
  for (const line of lines) {
    const found = /\[([VIWEF]):onnxruntime/.exec(line);
    if (found && SEVERITY[found[1]] >= level) console.warn(line);
  }
}

/**
 * The ORT `executionProviders` entry for `provider` and the device it will use.
 * @param {string} provider
 * @param {string} build
 * @param {Object<string, any>} [extra] EP options Python checked (preferredLayout, ...)
 */
async function providerEntry(provider, build, extra) {
  // Python sends options for WebGPU only: ORT-web's wasm EP takes none.
  if (provider !== 'webgpu') return { ep: provider, device: null };
  if (build === 'native') {
    // Our own device: the native build destroys a device it created itself when
    // its last session is released, taking users' buffers with it.
    const device = await ortwebDevice();
    return { ep: { ...extra, name: 'webgpu', device }, device };
  }
  return { ep: extra && Object.keys(extra).length ? { ...extra, name: 'webgpu' } : 'webgpu', device: null };
}

/**
 * Create a session, trying `providers` in order.
 * @param {Uint8Array} bytes the model
 * @param {string[]} providers e.g. ['webgpu', 'wasm']
 * @param {any} allOptions ORT SessionOptions, without executionProviders; its
 *   preferredOutputLocation applies to WebGPU only (wasm outputs are on the CPU);
 *   ortwebProviderOptions (provider → EP options) is ortweb's, not ORT's
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
      const build = buildFor(provider);
      let session;
      try {
        const ort = await loadBuild(build);
        let { ep, device } = await providerEntry(provider, build, epOptions[provider]);
        const opts = { ...options, executionProviders: [ep] };
        if (provider !== 'webgpu') delete opts.preferredOutputLocation;
        const logLevel = opts.logSeverityLevel ?? 2;
        /** @type {import('./placement.js').Placement|null} */
        let placement = null;
        if (provider === 'webgpu') {
          // ORT says which nodes it put on the CPU only in its verbose log.
          const verbose = { ...opts, logSeverityLevel: 0, logVerbosityLevel: 0 };
          // ORT copies the model into its heap and leaves `bytes` as it was (no
          // proxy worker, which would take the buffer): no copy of our own.
          const { value, lines } = await captureConsole(() => ort.InferenceSession.create(bytes, verbose));
          session = value;
          placement = parsePlacement(lines);
          replayLog(lines, logLevel);
        } else {
          session = await ort.InferenceSession.create(bytes, opts);
        }
        const typeProblem = await typeReason(provider, session);
        if (typeProblem) {
          await session.release();
          skipped.push({ provider, reason: typeProblem, kind: 'skipped' });
          continue;
        }
        if (provider === 'webgpu' && !device) device = await ort.env.webgpu.device;
        const handle = nextHandle++;
        sessions.set(handle, { session, ort, provider, build, device, logLevel });
        return {
          handle,
          provider,
          build,
          skipped,
          placement,
          inputs: session.inputMetadata.map(describeValue),
          outputs: session.outputMetadata.map(describeValue),
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
 * @returns {SessionEntry}
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
  const s = entry(handle);
  return { ort: s.ort, session: s.session };
}

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
 * The bytes of a non-ORT GPU value, read on the device it lives on.
 * @param {import('./values.js').ValueEntry} entry
 */
async function readEntry(entry) {
  const device = entry.device ?? await ortwebDevice();
  return downloadBuffer(device, entry.buffer, byteLength(entry.type, entry.dims));
}

/**
 * The ORT tensor for a feed, checked first: a bad GPU buffer never reaches ORT.
 * @param {SessionEntry} s
 * @param {FeedSpec} feed
 */
async function feedTensor(s, feed) {
  if (feed.value === undefined || feed.value === null) {
    return makeTensor(s.ort, /** @type {string} */ (feed.type), feed.data, /** @type {number[]} */ (feed.dims));
  }
  const entry = getValue(feed.value);
  const what = `input '${feed.name}'`;
  if (s.provider !== 'webgpu') {
    // A wasm session reads its inputs from the CPU: download once for this run.
    const data = entry.owner === 'ort' ? await entry.tensor.getData() : await readEntry(entry);
    return makeTensor(s.ort, entry.type, viewAs(entry.type, data), entry.dims);
  }
  await checkBuffer(s.device, entry.buffer, byteLength(entry.type, entry.dims), what);
  return s.ort.Tensor.fromGpuBuffer(entry.buffer, { dataType: entry.type, dims: entry.dims });
}

/**
 * Run a session. CPU outputs come back as data; GPU outputs as value handles.
 * @param {number} handle
 * @param {FeedSpec[]} feeds
 * @param {FetchSpec[]} fetches outputs to fetch, in order
 * @param {object|null} [runOptions] ORT RunOptions
 */
export function runSession(handle, feeds, fetches, runOptions = null) {
  return pageQueue.run(async () => {
    const s = entry(handle);
    /** @type {Object<string, any>} */
    const feedMap = {};
    for (const feed of feeds) feedMap[feed.name] = await feedTensor(s, feed);
    const preallocated = fetches.filter((f) => f.value !== null && f.value !== undefined);
    /** @type {any} */
    let fetchArg = fetches.map((f) => f.name);
    if (preallocated.length && s.provider === 'webgpu') {
      fetchArg = {};
      for (const f of fetches) {
        if (f.value === null || f.value === undefined) {
          fetchArg[f.name] = null;
          continue;
        }
        const target = getValue(f.value);
        await checkBuffer(s.device, target.buffer, byteLength(target.type, target.dims), `output '${f.name}'`);
        fetchArg[f.name] = s.ort.Tensor.fromGpuBuffer(target.buffer, { dataType: target.type, dims: target.dims });
      }
    }
    // Sessions created with the verbose log (placement capture) run at the user's level.
    const options = { logSeverityLevel: s.logLevel, ...(runOptions ?? {}) };
    let results;
    try {
      results = await s.session.run(feedMap, fetchArg, options);
    } finally {
      // ORT has copied the feeds into its heap: their staging arrays can be reused.
      for (const feed of feeds) if (feed.value === undefined || feed.value === null) recycle(/** @type {string} */ (feed.type), feed.data);
    }
    const outputs = [];
    for (const f of fetches) {
      const tensor = results[f.name];
      if (f.value !== null && f.value !== undefined) {
        const target = getValue(f.value);
        if (tensor.location !== 'gpu-buffer') {
          // The session ran on the CPU: copy its result into the GPU buffer asked for.
          writeBuffer(target.device ?? await ortwebDevice(), target.buffer, bytesOf(tensor.data));
        }
        outputs.push({ name: f.name, value: f.value, type: target.type, dims: target.dims, location: 'gpu-buffer' });
      } else if (tensor.location === 'gpu-buffer') {
        const dims = Array.from(tensor.dims, Number);
        const value = registerValue({ owner: 'ort', type: tensor.type, dims, buffer: tensor.gpuBuffer, device: s.device, tensor });
        outputs.push({ name: f.name, value, type: tensor.type, dims, location: 'gpu-buffer', fresh: true });
      } else {
        outputs.push({ ...decodeTensor(f.name, tensor), value: null, location: 'cpu' });
      }
    }
    return outputs;
  });
}

/**
 * Read a GPU value back (queued: ORT-web throws on a second concurrent getData).
 * @param {number} handle
 * @param {boolean} release
 */
export function readGpuValue(handle, release) {
  return pageQueue.run(async () => {
    const out = await readValue(handle, release, readEntry);
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
    await found.session.release();
    return true;
  });
}
