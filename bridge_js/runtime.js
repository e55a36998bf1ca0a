// @ts-check
/**
 * Loading onnxruntime-web builds and probing WebGPU.
 *
 * ORT-web ships several builds; a session is served by the smallest one that has
 * its execution provider:
 *  - `wasm`: `ort.wasm.min.mjs` + `ort-wasm-simd-threaded.wasm`, the smallest, CPU only;
 *  - `jsep`: `ort.min.mjs` + `ort-wasm-simd-threaded.jsep.wasm`, the JS-kernel WebGPU EP;
 *  - `native`: `ort.webgpu.min.mjs` + `ort-wasm-simd-threaded.asyncify.wasm`, the C++ WebGPU EP.
 * The WebGPU builds also run wasm, but slower than the plain build (README,
 * *Benchmarks*), so wasm-only sessions never load them.
 * @module runtime
 */

import builds from './builds.json' with { type: 'json' };

/**
 * The builds by name: the module the bridge imports, the wasm binary it loads (its
 * Emscripten glue is the same name with `.mjs`), the providers it runs. The table is
 * builds.json, which the host tools read too, to ship only the files a site loads.
 * @type {Object<string, {module: string, wasm: string, providers: string[]}>}
 */
export const BUILDS = builds;

/**
 * @typedef {object} RuntimeConfig
 * @property {string} ortBaseURL   URL of the folder holding ORT-web's dist files (ends with '/').
 * @property {string} enginesBaseURL URL of the folder holding the other engines' files, one
 *   folder each ('tract/', 'wonnx/'; ends with '/').
 * @property {string} webgpuBuild  'native' (default: the C++ WebGPU EP, which fails loudly and computes
 *   opset-9 Softmax right) or 'jsep' (the JS-kernel EP).
 * @property {number|null} numThreads  wasm threads; null keeps ORT's default.
 * @property {string|null} logLevel   ORT's env.logLevel; null keeps ORT's default.
 */

/** @type {RuntimeConfig} */
export const config = {
  ortBaseURL: new URL('../ort/', import.meta.url).href,
  enginesBaseURL: new URL('../engines/', import.meta.url).href,
  webgpuBuild: 'native',
  numThreads: null,
  logLevel: 'error',
};

/** @type {Map<string, Promise<any>>} */
const loaded = new Map();

/** @type {((urls: string[], fatal?: boolean) => Promise<void>)|null} */
let moduleCheck = null;

/**
 * Have `check` look at a build's module and Emscripten glue before they are
 * imported: in a site's Web Worker no import map's `integrity` covers them. A check
 * with `fatal` false leaves the page running when a module fails it.
 * @param {((urls: string[], fatal?: boolean) => Promise<void>)|null} check
 */
export function checkModulesWith(check) {
  moduleCheck = check;
}

/**
 * Import the module `urls[0]` once `urls` (it, and what it imports that the page has
 * not loaded yet) passed the module check; one that fails it rejects this import only.
 * @param {string[]} urls absolute
 */
export function importChecked(urls) {
  return Promise.resolve(moduleCheck?.(urls, false)).then(() => import(/* @vite-ignore */ urls[0]));
}

/**
 * The build that serves `provider` under the current configuration.
 * @param {string} provider 'wasm' or 'webgpu'
 */
export function buildFor(provider) {
  return provider === 'webgpu' ? config.webgpuBuild : 'wasm';
}

/**
 * The absolute URLs of a build's files: the module the bridge imports, its
 * Emscripten glue and its wasm binary.
 * @param {string} build a key of BUILDS
 * @returns {{module: string, glue: string, wasm: string}}
 */
export function buildFiles(build) {
  const spec = BUILDS[build];
  if (!spec) throw new Error(`unknown onnxruntime-web build '${build}' (expected one of ${Object.keys(BUILDS).join(', ')})`);
  return {
    module: config.ortBaseURL + spec.module,
    glue: config.ortBaseURL + spec.wasm.replace(/\.wasm$/, '.mjs'),
    wasm: config.ortBaseURL + spec.wasm,
  };
}

/**
 * Import an ORT-web build once and configure its `env`.
 * @param {string} build a key of BUILDS
 * @returns {Promise<any>} the module namespace (InferenceSession, Tensor, env)
 */
export function loadBuild(build) {
  const { module: url, glue } = buildFiles(build);
  let promise = loaded.get(build);
  if (!promise) {
    promise = Promise.resolve(moduleCheck?.([url, glue])).then(() => import(url)).then((ort) => {
      ort.env.wasm.wasmPaths = config.ortBaseURL;
      if (config.numThreads !== null) ort.env.wasm.numThreads = config.numThreads;
      if (config.logLevel !== null) ort.env.logLevel = config.logLevel;
      return ort;
    });
    // A failed import must not be cached: the next call retries.
    promise.catch(() => loaded.delete(build));
    loaded.set(build, promise);
  }
  return promise;
}

/** Builds imported so far, for runtime reports. */
export function loadedBuilds() {
  return [...loaded.keys()];
}

/**
 * @typedef {object} WebGpuInfo
 * @property {boolean} available
 * @property {string} reason   why not, when not available
 * @property {string[]} features adapter features such as 'shader-f16'
 * @property {Object<string,string>} info adapter vendor/architecture/device/description
 */

/** @type {Promise<WebGpuInfo>|null} */
let gpuProbe = null;

/**
 * Probe WebGPU once per page: is there an adapter, and with which features.
 * @returns {Promise<WebGpuInfo>}
 */
export function probeWebGpu() {
  if (!gpuProbe) {
    gpuProbe = (async () => {
      const gpu = /** @type {any} */ (globalThis.navigator)?.gpu;
      if (!gpu) {
        return { available: false, reason: 'navigator.gpu is missing (WebGPU disabled, or not a secure context)', features: [], info: {} };
      }
      let adapter = null;
      try {
        adapter = await gpu.requestAdapter();
      } catch (err) {
        return { available: false, reason: `requestAdapter() failed: ${err}`, features: [], info: {} };
      }
      if (!adapter) {
        return { available: false, reason: 'navigator.gpu.requestAdapter() returned null (no usable GPU adapter)', features: [], info: {} };
      }
      const raw = adapter.info || {};
      const info = {
        vendor: String(raw.vendor ?? ''),
        architecture: String(raw.architecture ?? ''),
        device: String(raw.device ?? ''),
        description: String(raw.description ?? ''),
      };
      return { available: true, reason: '', features: [...adapter.features].sort(), info };
    })();
  }
  return gpuProbe;
}

/** A tiny module using SIMD instructions (from wasm-feature-detect). */
const SIMD_PROBE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0, 1, 5, 1, 96, 0, 1, 123, 3, 2, 1, 0, 10, 10, 1, 8, 0, 65, 0, 253, 15, 253, 98, 11]);

/**
 * What this page's runtime is: versions, builds, threads, isolation, WebGPU.
 * Thread counts are ORT's own after it initialised (it drops to 1 without
 * cross-origin isolation).
 */
export async function runtimeInfo() {
  const gpu = await probeWebGpu();
  /** @type {Object<string, any>} */
  const builds = {};
  for (const [name, promise] of loaded) {
    try {
      const ort = await promise;
      builds[name] = {
        version: ort.env.versions?.web ?? null,
        numThreads: ort.env.wasm.numThreads ?? null,
        module: BUILDS[name].module,
        wasm: BUILDS[name].wasm,
      };
    } catch (err) {
      builds[name] = { error: String(err) };
    }
  }
  return {
    crossOriginIsolated: Boolean(/** @type {any} */ (globalThis).crossOriginIsolated),
    sharedArrayBuffer: typeof SharedArrayBuffer !== 'undefined',
    hardwareConcurrency: globalThis.navigator?.hardwareConcurrency ?? null,
    simd: WebAssembly.validate(SIMD_PROBE),
    inWorker: typeof (/** @type {any} */ (globalThis).document) === 'undefined',
    webgpuBuild: config.webgpuBuild,
    requestedThreads: config.numThreads,
    webgpu: gpu,
    builds,
  };
}
