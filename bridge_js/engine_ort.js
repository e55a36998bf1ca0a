// @ts-check
/**
 * The onnxruntime-web engine: its execution providers `wasm` and `webgpu`.
 *
 * One adapter of the engine seam (engines.js). It is the only engine with GPU
 * values: feeds from GPU buffers, outputs left on the GPU, pre-allocated outputs.
 * @module engine_ort
 */

import { checkBuffer, ortwebDevice, writeBuffer } from './gpu.js';
import { SEVERITY, atLogLevel, captureConsole, ortSeverity, parsePlacement } from './placement.js';
import { buildFor, loadBuild, probeWebGpu } from './runtime.js';
import { bytesOf, decodeTensor, makeTensor, viewAs } from './tensors.js';
import { byteLength, entryBytes, getValue, registerValue } from './values.js';

/**
 * @param {any} meta ORT's inputMetadata/outputMetadata entry
 */
function describeValue(meta) {
  if (!meta.isTensor) return { name: meta.name, type: null, shape: null };
  return { name: meta.name, type: meta.type, shape: Array.from(meta.shape ?? [], (d) => (typeof d === 'bigint' ? Number(d) : d)) };
}

/**
 * Why `provider` cannot even be tried here, or '' when it can.
 * @param {string} provider 'wasm' or 'webgpu'
 */
async function skipReason(provider) {
  if (provider === 'wasm') return '';
  const gpu = await probeWebGpu();
  return gpu.available ? '' : gpu.reason;
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
 * Print the captured log lines the user's severity level asks for.
 * @param {string[]} lines
 * @param {number} level
 */
function replayLog(lines, level) {
  for (const line of lines) {
    const severity = ortSeverity(line);
    if (severity !== null && severity >= level) console.warn(line);
  }
}

/**
 * The level ORT's lines print at around a call: what the call asked for, or the
 * environment's lower level (its default logger's lines, e.g. a failed allocation).
 * @param {any} ort
 * @param {number} level
 */
function printLevel(ort, level) {
  return Math.min(level, SEVERITY[ort.env.logLevel] ?? SEVERITY.warning);
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
 * The ORT tensor for a feed, checked first: a bad GPU buffer never reaches ORT.
 * @param {OrtSession} s
 * @param {import('./engines.js').FeedSpec} feed
 */
async function feedTensor(s, feed) {
  if (feed.value === undefined || feed.value === null) {
    return makeTensor(s.ort, /** @type {string} */ (feed.type), feed.data, /** @type {number[]} */ (feed.dims));
  }
  const entry = getValue(feed.value);
  const what = `input '${feed.name}'`;
  if (s.provider !== 'webgpu') {
    // A wasm session reads its inputs from the CPU: download once for this run.
    const data = entry.owner === 'ort' ? await entry.tensor.getData() : await entryBytes(entry);
    return makeTensor(s.ort, entry.type, viewAs(entry.type, data), entry.dims);
  }
  await checkBuffer(s.device, entry.buffer, byteLength(entry.type, entry.dims), what);
  return s.ort.Tensor.fromGpuBuffer(entry.buffer, { dataType: entry.type, dims: entry.dims });
}

/**
 * A session of onnxruntime-web.
 */
class OrtSession {
  /**
   * @param {any} ort the ORT module that created it
   * @param {any} session the ORT InferenceSession
   * @param {string} provider
   * @param {string} build key of runtime.BUILDS
   * @param {any} device the GPUDevice ORT runs on (null for wasm)
   * @param {number} logLevel the severity runs log at (the user's, not the capture's)
   * @param {any} placement
   */
  constructor(ort, session, provider, build, device, logLevel, placement) {
    this.ort = ort;
    this.session = session;
    this.provider = provider;
    this.build = build;
    this.device = device;
    this.logLevel = logLevel;
    this.placement = placement;
    this.inputs = session.inputMetadata.map(describeValue);
    this.outputs = session.outputMetadata.map(describeValue);
  }

  /**
   * @param {import('./engines.js').FeedSpec[]} feeds
   * @param {import('./engines.js').FetchSpec[]} fetches
   * @param {object|null} runOptions
   */
  async run(feeds, fetches, runOptions) {
    /** @type {Object<string, any>} */
    const feedMap = {};
    for (const feed of feeds) feedMap[feed.name] = await feedTensor(this, feed);
    const preallocated = fetches.filter((f) => f.value !== null && f.value !== undefined);
    /** @type {any} */
    let fetchArg = fetches.map((f) => f.name);
    if (preallocated.length && this.provider === 'webgpu') {
      fetchArg = {};
      for (const f of fetches) {
        if (f.value === null || f.value === undefined) {
          fetchArg[f.name] = null;
          continue;
        }
        const target = getValue(f.value);
        await checkBuffer(this.device, target.buffer, byteLength(target.type, target.dims), `output '${f.name}'`);
        fetchArg[f.name] = this.ort.Tensor.fromGpuBuffer(target.buffer, { dataType: target.type, dims: target.dims });
      }
    }
    // A session created with the verbose log (placement capture) logs through it on
    // every run, whatever the run's level: the console tap prints the user's level.
    const options = { logSeverityLevel: this.logLevel, ...(runOptions ?? {}) };
    const results = await atLogLevel(printLevel(this.ort, options.logSeverityLevel),
      () => this.session.run(feedMap, fetchArg, options));
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
        const value = registerValue({ owner: 'ort', type: tensor.type, dims, buffer: tensor.gpuBuffer, device: this.device, tensor });
        outputs.push({ name: f.name, value, type: tensor.type, dims, location: 'gpu-buffer', fresh: true });
      } else {
        outputs.push({ ...decodeTensor(f.name, tensor), value: null, location: 'cpu' });
      }
    }
    return outputs;
  }

  release() {
    return atLogLevel(printLevel(this.ort, this.logLevel), () => this.session.release());
  }
}

/**
 * Create an onnxruntime-web session on `provider`.
 * @param {Uint8Array} bytes
 * @param {string} provider
 * @param {any} allOptions ORT SessionOptions, without executionProviders; ortweb's
 *   ortwebGraph (for engines that read no model metadata) is not ORT's and is left out
 * @param {Object<string, any>|undefined} epOptions this provider's EP options
 * @returns {Promise<OrtSession|{skip: string}>}
 */
async function create(bytes, provider, allOptions, epOptions) {
  const { ortwebGraph: _graph, ...options } = allOptions ?? {};
  const build = buildFor(provider);
  const ort = await loadBuild(build);
  let { ep, device } = await providerEntry(provider, build, epOptions);
  const opts = { ...options, executionProviders: [ep] };
  if (provider !== 'webgpu') delete opts.preferredOutputLocation;
  const logLevel = opts.logSeverityLevel ?? 2;
  /** @type {import('./placement.js').Placement|null} */
  let placement = null;
  let session;
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
    session = await atLogLevel(printLevel(ort, logLevel), () => ort.InferenceSession.create(bytes, opts));
  }
  const typeProblem = await typeReason(provider, session);
  if (typeProblem) {
    await session.release();
    return { skip: typeProblem };
  }
  if (provider === 'webgpu' && !device) device = await ort.env.webgpu.device;
  return new OrtSession(ort, session, provider, build, device, logLevel, placement);
}

/** @type {import('./engines.js').Engine} */
export const ortEngine = {
  name: 'ort',
  providers: ['webgpu', 'wasm'],
  skipReason,
  buildFor,
  create,
};
