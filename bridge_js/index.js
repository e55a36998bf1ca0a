// @ts-check
/**
 * The ortweb bridge: the one object Python talks to (`globalThis.ortwebBridge`).
 *
 * Every asynchronous method resolves to an envelope (`{ok, value}` or
 * `{ok: false, error}`) and never rejects, so Python translates errors in one
 * place. Works in a page and in a (module) Web Worker.
 * @module index
 */

import { enveloped, fail, ok } from './errors.js';
import { trackDestroyedBuffers } from './gpu.js';
import { cacheInfo, canHash, clearCache, fetchFile, sha256Hex } from './fetching.js';
import { installMeters, meters } from './meters.js';
import { installConsoleTap } from './placement.js';
import { pageQueue } from './queue.js';
import { createScheduler, createWaker } from './scheduler.js';
import { BUILDS, config, loadBuild, loadedBuilds, probeWebGpu, runtimeInfo } from './runtime.js';
import {
  createSession, liveSessions, providerReasons, readGpuValue, releaseSession, runSession, uploadValue, webgpuDevice,
} from './sessions.js';
import { allocate, pooled } from './tensors.js';
import { getChoice, putChoice } from './store.js';
import { disposeValue, getValue, valueFromUserBuffer, valueStats } from './values.js';
import { freshValues, readFeeds, writeOutputs } from './wire.js';

/** Whether this engine has WebAssembly stack switching (JSPI): without it Pyodide's
 * `callPromising` throws, and only the async API works (Firefox and Safari today). */
const HAS_JSPI = typeof WebAssembly === 'object' &&
  ('Suspending' in WebAssembly || 'Suspender' in WebAssembly);

export const BRIDGE_VERSION = '0.1.0';

/**
 * @typedef {object} BridgeOptions
 * @property {string} [ortBaseURL] folder of ORT-web's dist files
 * @property {string} [enginesBaseURL] folder of the other engines' folders (tract/, wonnx/)
 * @property {string} [webgpuBuild] 'native' (default) or 'jsep'
 * @property {number|null} [numThreads]
 * @property {string[]|null} [defaultProviders] providers for sessions that name none
 */

/**
 * @template T
 * @typedef {import('./errors.js').Envelope<T>} Envelope
 */
/**
 * @template {(...args: any) => any} F
 * @typedef {Awaited<ReturnType<F>>} ResultOf what an async function resolves to
 */
/** @typedef {BridgeOptions & {ortBaseURL: string, webgpuBuild: string}} BridgeSettings */

/**
 * A bridge call started by `start`/`startThen`, read by Python's waiters
 * (py/ortweb/_bridge/_waiting.py).
 * @typedef {object} BridgeJob
 * @property {boolean} done        whether the call has settled
 * @property {Envelope<any>|null} envelope  its envelope once settled
 * @property {Promise<Envelope<any>>} promise  resolves to the envelope; never rejects
 * @property {() => Promise<Envelope<any>>} wait  `promise`, as a call's result
 */

/**
 * The API the bridge exposes to Python as `globalThis.ortwebBridge`. Python calls
 * it in one place, py/ortweb/_bridge/_protocol.py, one function per method. Every
 * asynchronous method resolves to an {@link Envelope} and never rejects.
 * @typedef {object} OrtwebBridge
 * @property {string} version  BRIDGE_VERSION
 * @property {string[]|null} defaultProviders  providers for sessions that name none
 * @property {(opts: BridgeOptions) => BridgeSettings} configure  throws on a bad webgpuBuild
 * @property {() => BridgeSettings} settings
 * @property {typeof allocate} allocate  a pooled staging array for a large feed (tensors.js)
 * @property {(callback: () => void, delay?: number) => void} scheduleCallback
 *   replaces Pyodide's on a page's main thread (scheduler.js)
 * @property {() => Promise<Envelope<import('./runtime.js').WebGpuInfo>>} probeWebGpu
 * @property {() => Promise<Envelope<Object<string, string>>>} providerReasons
 *   every provider → why it cannot be tried here ('' when it can)
 * @property {(build: string) => Promise<Envelope<{bridge: string, ort: string|null, common: string|null}>>} versions
 * @property {(bytes: Uint8Array, providers: string[], options: any) => Promise<Envelope<ResultOf<typeof createSession>>>} createSession
 * @property {(handle: number, fetches: Array<[string, number|null]>, runOptions: object|null, ...feeds: any[]) => Promise<Envelope<any[]>>} run
 *   outputs in the flat form of wire.js
 * @property {(type: string, dims: number[], data: any) => Promise<Envelope<number>>} uploadValue
 * @property {(handle: number, release: boolean) => Promise<Envelope<ResultOf<typeof readGpuValue>>>} readValue
 * @property {(buffer: any, type: string, dims: number[]) => Envelope<number>} valueFromGpuBuffer  synchronous
 * @property {(handle: number) => Envelope<GPUBuffer>} valueGpuBuffer  synchronous
 * @property {(handle: number, byFinalizer?: boolean) => void} disposeValue
 * @property {() => Promise<Envelope<GPUDevice>>} webgpuDevice
 * @property {(method: string, envelope: Envelope<any>) => void} discard
 *   release what a call nobody waits for any more produced
 * @property {(method: string, ...args: any[]) => BridgeJob} start
 * @property {(wake: any, id: number, method: string, ...args: any[]) => BridgeJob} startThen
 * @property {typeof meters} meters
 * @property {() => Promise<Envelope<ReturnType<typeof meters>>>} settledMeters
 * @property {() => Promise<Envelope<ResultOf<typeof runtimeInfo>>>} runtimeInfo
 * @property {(key: string) => Promise<Envelope<any>>} getChoice  a JSON value or null
 * @property {(key: string, value: any) => Promise<Envelope<void>>} putChoice
 * @property {(handle: number) => Promise<Envelope<boolean>>} release
 * @property {() => BridgeStats} stats
 * @property {(url: string, cache: boolean, progress: any) => Promise<Envelope<import('./fetching.js').Fetched>>} fetchFile
 *   a model or data file by URL, into one buffer, through Cache Storage (fetching.js)
 * @property {(bytes: Uint8Array) => Promise<Envelope<string>>} sha256  lowercase hex; '' where
 *   the page cannot hash (not a secure context)
 * @property {() => Promise<Envelope<ResultOf<typeof cacheInfo>>>} cacheInfo
 * @property {(url: string|null) => Promise<Envelope<number>>} clearCache
 */

/**
 * @typedef {object} BridgeStats
 * @property {number} sessions  live sessions
 * @property {number} queued    calls waiting in the page's queue
 * @property {string[]} builds  ORT-web builds loaded
 * @property {ReturnType<typeof valueStats>} values
 * @property {number} pooledBytes  bytes of staging arrays kept for reuse
 */

/**
 * Build the bridge object.
 * @param {BridgeOptions} [options]
 * @returns {OrtwebBridge}
 */
export function createBridge(options = {}) {
  /**
   * @param {string} method @param {any[]} args
   */
  const startJob = (method, args) => {
    const job = {
      done: false,
      envelope: /** @type {any} */ (null),
      promise: /** @type {Promise<any>} */ (Promise.resolve(null)),
      // A call's result is what Pyodide turns into a Future cheaply; a promise
      // read as an attribute is wrapped in a Task first when waited on.
      wait: () => job.promise,
    };
    /** @param {any} envelope */
    const settle = (envelope) => {
      job.done = true;
      job.envelope = envelope;
      return envelope;
    };
    const fn = /** @type {any} */ (bridge)[method];
    let started;
    try {
      started = typeof fn === 'function' ? fn(...args) : fail(new Error(`no bridge method '${method}'`));
    } catch (err) {
      started = fail(err);
    }
    // Every method envelopes its errors; a throw or rejection is enveloped here all the same.
    job.promise = Promise.resolve(started).then(settle, (err) => settle(fail(err)));
    return job;
  };
  const wakeAfter = createWaker();
  /** @type {OrtwebBridge} */
  const bridge = {
    version: BRIDGE_VERSION,
    /** @type {string[]|null} */
    defaultProviders: options.defaultProviders ?? null,
    /** @param {BridgeOptions} opts */
    configure(opts) {
      if (opts.ortBaseURL) config.ortBaseURL = new URL(opts.ortBaseURL, globalThis.location?.href).href;
      if (opts.enginesBaseURL) config.enginesBaseURL = new URL(opts.enginesBaseURL, globalThis.location?.href).href;
      if (opts.webgpuBuild) {
        if (!BUILDS[opts.webgpuBuild] || opts.webgpuBuild === 'wasm') {
          throw new Error(`webgpuBuild must be 'jsep' or 'native', got '${opts.webgpuBuild}'`);
        }
        config.webgpuBuild = opts.webgpuBuild;
      }
      if (opts.numThreads !== undefined) config.numThreads = opts.numThreads;
      if (opts.defaultProviders !== undefined) bridge.defaultProviders = opts.defaultProviders;
      return { ...config, defaultProviders: bridge.defaultProviders };
    },
    allocate,
    /** For Pyodide's event loop on a page's main thread (see scheduler.js). */
    scheduleCallback: createScheduler(),
    settings: () => ({ ...config, defaultProviders: bridge.defaultProviders }),
    probeWebGpu: () => enveloped(probeWebGpu),
    providerReasons: () => enveloped(providerReasons),
    /** @param {string} build */
    versions: (build) => enveloped(async () => {
      const ort = await loadBuild(build || 'wasm');
      return { bridge: BRIDGE_VERSION, ort: ort.env.versions?.web ?? null, common: ort.env.versions?.common ?? null };
    }),
    /** @param {Uint8Array} bytes @param {string[]} providers @param {object} options */
    createSession: (bytes, providers, options) => enveloped(() => createSession(bytes, providers, options)),
    /**
     * Run a session. The per-call path, so feeds and outputs travel in the flat form
     * of wire.js: feeds as this call's trailing arguments, outputs as one array.
     * @param {number} handle
     * @param {Array<[string, number|null]>} fetches `[name, valueHandle or null]`, in order
     * @param {object|null} runOptions
     * @param {...any} feeds see wire.js
     * @returns {Promise<any>} an envelope of the outputs in flat form (wire.js)
     */
    run: (handle, fetches, runOptions, ...feeds) => enveloped(async () => writeOutputs(await runSession(
      handle,
      readFeeds(feeds),
      fetches.map(([name, value]) => ({ name, value })),
      runOptions,
    ))),
    /** @param {string} type @param {number[]} dims @param {any} data */
    uploadValue: (type, dims, data) => enveloped(() => uploadValue(type, dims, data)),
    /** @param {number} handle @param {boolean} release */
    readValue: (handle, release) => enveloped(() => readGpuValue(handle, release)),
    /**
     * Synchronous: wrap a user's GPUBuffer (checked for usage and size now, for its
     * device and liveness before each run).
     * @param {any} buffer @param {string} type @param {number[]} dims
     */
    valueFromGpuBuffer: (buffer, type, dims) => {
      try {
        return ok(valueFromUserBuffer(buffer, type, Array.from(dims, Number), null));
      } catch (err) {
        return fail(err);
      }
    },
    /** @param {number} handle @param {boolean} [byFinalizer] */
    disposeValue: (handle, byFinalizer = false) => disposeValue(handle, byFinalizer),
    /** @param {number} handle */
    valueGpuBuffer: (handle) => {
      try {
        return ok(getValue(handle).buffer);
      } catch (err) {
        return fail(err);
      }
    },
    webgpuDevice: () => enveloped(webgpuDevice),
    /**
     * Python stopped waiting for a call (task cancelled) and this is its settled
     * envelope: release what it produced, which nobody else will.
     * @param {string} method @param {any} envelope
     */
    discard: (method, envelope) => {
      if (!envelope.ok) return;
      const v = envelope.value;
      if (method === 'run') {
        for (const value of freshValues(v)) disposeValue(value);
      } else if (method === 'createSession') {
        releaseSession(v.handle);
      } else if (method === 'uploadValue') {
        disposeValue(v);
      }
    },
    /**
     * Start `bridge[method](...args)` and return a job that records its envelope
     * when it settles: `{done, envelope, promise, wait()}`. For the sync API (which
     * suspends on `wait()`) and where the wake-up of `startThen` is turned off: then
     * Python looks at `done` after one turn of the event loop rather than awaiting
     * the promise, as Pyodide wraps an awaited promise in an asyncio Future, and that
     * costs a second trip through the event loop per call (see `_bridge.call`).
     * @param {string} method @param {...any} args
     */
    start: (method, ...args) => startJob(method, args),
    /**
     * `start`, and call `wake(id, ok, valueOrError)` (a Python function's PyProxy,
     * through `callPromising` so that Python may block there with JSPI) once the job
     * has settled, in a microtask rather than a turn of the event loop (see
     * scheduler.js `createWaker`).
     * @param {any} wake @param {number} id @param {string} method @param {...any} args
     */
    startThen: (wake, id, method, ...args) => {
      const job = startJob(method, args);
      // The outcome travels as arguments: each attribute Python reads is a crossing.
      wakeAfter(job.promise, (/** @type {any} */ e) => {
        const outcome = e.ok ? e.value : e.error;
        // A method of the PyProxy: called on it, not detached from it.
        return HAS_JSPI ? wake.callPromising(id, e.ok, outcome) : wake(id, e.ok, outcome);
      });
      return job;
    },
    meters,
    /** Collect garbage (when the page exposes gc()) and let finalizers run, then read. */
    settledMeters: () => enveloped(async () => {
      /** @type {any} */ (globalThis).gc?.();
      await new Promise((resolve) => setTimeout(resolve, 0));
      await new Promise((resolve) => setTimeout(resolve, 0));
      return meters();
    }),
    runtimeInfo: () => enveloped(runtimeInfo),
    /** @param {string} key */
    getChoice: (key) => enveloped(() => getChoice(key)),
    /** @param {string} key @param {any} value */
    putChoice: (key, value) => enveloped(() => putChoice(key, value)),
    /** @param {number} handle */
    release: (handle) => enveloped(() => releaseSession(handle)),
    stats: () => ({
      sessions: liveSessions(), queued: pageQueue.pending, builds: loadedBuilds(), values: valueStats(), pooledBytes: pooled(),
    }),
    /** @param {string} url @param {boolean} cache @param {any} progress */
    fetchFile: (url, cache, progress) => enveloped(() => fetchFile(url, { cache, progress })),
    /** @param {Uint8Array} bytes */
    sha256: (bytes) => enveloped(async () => (canHash() ? sha256Hex(bytes) : '')),
    cacheInfo: () => enveloped(cacheInfo),
    /** @param {string|null} url */
    clearCache: (url) => enveloped(() => clearCache(url)),
  };
  return bridge;
}

/**
 * Create the bridge and publish it as `globalThis.ortwebBridge` for Python.
 * @param {BridgeOptions} [options]
 */
export function installBridge(options = {}) {
  trackDestroyedBuffers();
  installConsoleTap();
  installMeters();
  const bridge = createBridge(options);
  bridge.configure(options);
  /** @type {any} */ (globalThis).ortwebBridge = bridge;
  return bridge;
}
