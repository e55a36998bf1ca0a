// @ts-check
/**
 * The wonnx engine (@webonnx/wonnx-wasm 0.5.1: WebGPU compute shaders compiled when
 * the session is created), provider `wonnx`. Its sessions (wonnx_session.js) are
 * imported when a session first tries it.
 * @module engine_wonnx
 */

import * as engineFiles from './engine_files.js';
import { lazyCreate } from './lazy_engine.js';
import { probeWebGpu } from './runtime.js';

/** The code imported when a session first tries wonnx. */
const CODE = ['./wonnx_session.js'];

/** @type {import('./engines.js').Engine} */
export const wonnxEngine = {
  name: 'wonnx',
  providers: ['wonnx'],
  async skipReason() {
    const gpu = await probeWebGpu();
    return gpu.available ? '' : `the wonnx engine needs WebGPU: ${gpu.reason}`;
  },
  buildFor: () => 'wonnx',
  create: lazyCreate('wonnx', CODE, import.meta.url, engineFiles),
};
