// @ts-check
/**
 * WebGPU device and buffer checks for IO binding.
 *
 * ortweb owns one GPUDevice per page and hands it to ORT-web's native WebGPU build
 * (`{name: 'webgpu', device}`), because the build otherwise destroys its own device
 * when the last WebGPU session is released, and every user buffer with it. The JSEP
 * build ignores a given device; there the device is ORT's (`env.webgpu.device`),
 * readable once a WebGPU session exists.
 *
 * ORT-web does not check the buffers it is given: a buffer without STORAGE usage,
 * destroyed, too small or from another device gives silent zeros, garbage or a
 * broken session. So every buffer is checked here first.
 * @module gpu
 */

import { BridgeError } from './errors.js';
import { probeWebGpu } from './runtime.js';

/** Bytes per element of the types ORT-web can hold in a GPU buffer. */
export const GPU_ITEMSIZE = /** @type {Object<string, number>} */ ({
  float32: 4, float16: 2, int32: 4, int64: 8, uint32: 4, uint8: 1, bool: 1,
});

/** @type {WeakSet<object>} */
const destroyed = new WeakSet();
/** @type {WeakMap<object, string>} buffer → '' (usable on ortweb's device) or why not */
const deviceCheck = new WeakMap();

/**
 * Record destroyed buffers: WebGPU has no way to ask a buffer whether it was
 * destroyed, so `destroy()` is wrapped once per page.
 */
export function trackDestroyedBuffers() {
  const proto = /** @type {any} */ (globalThis).GPUBuffer?.prototype;
  if (!proto || proto.__ortwebTracked) return;
  const original = proto.destroy;
  proto.destroy = function destroy() {
    destroyed.add(this);
    return original.call(this);
  };
  proto.__ortwebTracked = true;
}

/** @type {Promise<any>|null} */
let ownDevice = null;

/**
 * ortweb's GPUDevice (created once, with the adapter's limits and `shader-f16`
 * when available).
 * @returns {Promise<any>}
 */
export function ortwebDevice() {
  if (!ownDevice) {
    ownDevice = (async () => {
      const info = await probeWebGpu();
      if (!info.available) throw new BridgeError('ProviderUnavailable', `no WebGPU device: ${info.reason}`);
      const adapter = await /** @type {any} */ (globalThis.navigator).gpu.requestAdapter();
      const limits = adapter.limits;
      const requiredLimits = {};
      for (const key of ['maxBufferSize', 'maxStorageBufferBindingSize', 'maxComputeWorkgroupStorageSize',
        'maxComputeInvocationsPerWorkgroup', 'maxComputeWorkgroupSizeX', 'maxComputeWorkgroupSizeY',
        'maxComputeWorkgroupSizeZ', 'maxComputeWorkgroupsPerDimension', 'maxStorageBuffersPerShaderStage']) {
        if (key in limits) /** @type {any} */ (requiredLimits)[key] = limits[key];
      }
      const requiredFeatures = [...adapter.features].filter((f) => f === 'shader-f16' || f === 'timestamp-query');
      const device = await adapter.requestDevice({ requiredLimits, requiredFeatures, label: 'ortweb' });
      device.lost.then(() => { ownDevice = null; });
      return device;
    })();
    ownDevice.catch(() => { ownDevice = null; });
  }
  return ownDevice;
}

/**
 * @param {any} device
 * @param {any} buffer
 */
async function checkDevice(device, buffer) {
  let verdict = deviceCheck.get(buffer);
  if (verdict === undefined) {
    // Binding the buffer on our device is the only way to learn whether it belongs to it.
    device.pushErrorScope('validation');
    const layout = device.createBindGroupLayout({
      entries: [{ binding: 0, visibility: 4 /* COMPUTE */, buffer: { type: 'read-only-storage' } }],
    });
    device.createBindGroup({ layout, entries: [{ binding: 0, resource: { buffer } }] });
    const error = await device.popErrorScope();
    verdict = error ? 'it was created on another GPUDevice than the one ORT uses (ortweb.webgpu_device())' : '';
    deviceCheck.set(buffer, verdict);
  }
  return verdict;
}

/**
 * Why `buffer` cannot hold `byteLength` bytes of a tensor for ORT, or ''.
 * Synchronous checks only (usage, size, destroyed).
 * @param {any} buffer
 * @param {number} byteLength
 */
export function bufferProblem(buffer, byteLength) {
  const Usage = /** @type {any} */ (globalThis).GPUBufferUsage;
  if (!buffer || typeof buffer.size !== 'number' || typeof buffer.usage !== 'number') {
    return `expected a GPUBuffer, got ${Object.prototype.toString.call(buffer)}`;
  }
  if (destroyed.has(buffer)) return 'the GPUBuffer was destroyed';
  if (!(buffer.usage & Usage.STORAGE)) {
    return `the GPUBuffer lacks STORAGE usage (usage flags ${buffer.usage}); create it with GPUBufferUsage.STORAGE`;
  }
  if (buffer.size < byteLength) {
    return `the GPUBuffer holds ${buffer.size} bytes but the tensor needs ${byteLength}`;
  }
  return '';
}

/**
 * Full check of a GPU buffer before ORT sees it; throws InvalidArgument.
 * @param {any} device the device ORT uses, or null when unknown
 * @param {any} buffer
 * @param {number} byteLength
 * @param {string} what e.g. "input 'x'"
 */
export async function checkBuffer(device, buffer, byteLength, what) {
  let problem = bufferProblem(buffer, byteLength);
  if (!problem && device) problem = await checkDevice(device, buffer);
  if (problem) throw new BridgeError('InvalidArgument', `${what}: ${problem}`);
}

/**
 * A new GPU buffer on `device` holding `bytes` (size rounded up to 16 bytes, as
 * WebGPU copies need multiples of 4).
 * @param {any} device
 * @param {Uint8Array} bytes
 */
export function uploadBuffer(device, bytes) {
  const Usage = /** @type {any} */ (globalThis).GPUBufferUsage;
  const size = Math.max(16, Math.ceil(bytes.byteLength / 16) * 16);
  const buffer = device.createBuffer({ size, usage: Usage.STORAGE | Usage.COPY_SRC | Usage.COPY_DST, label: 'ortweb' });
  if (bytes.byteLength) {
    const padded = bytes.byteLength % 4 ? new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4) : bytes;
    if (padded !== bytes) padded.set(bytes);
    device.queue.writeBuffer(buffer, 0, padded.buffer, padded.byteOffset, padded.byteLength);
  }
  return buffer;
}

/**
 * Copy the first `byteLength` bytes of `buffer` back to the CPU.
 * @param {any} device
 * @param {any} buffer
 * @param {number} byteLength
 * @returns {Promise<Uint8Array>}
 */
export async function downloadBuffer(device, buffer, byteLength) {
  const Usage = /** @type {any} */ (globalThis).GPUBufferUsage;
  if (!(buffer.usage & Usage.COPY_SRC)) {
    throw new BridgeError('InvalidArgument', `cannot read a GPUBuffer without COPY_SRC usage (usage flags ${buffer.usage})`);
  }
  const size = Math.max(4, Math.ceil(byteLength / 4) * 4);
  const staging = device.createBuffer({ size, usage: Usage.MAP_READ | Usage.COPY_DST, label: 'ortweb-download' });
  try {
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(buffer, 0, staging, 0, size);
    device.queue.submit([encoder.finish()]);
    await staging.mapAsync(1 /* GPUMapMode.READ */);
    return new Uint8Array(staging.getMappedRange(0, size).slice(0, byteLength));
  } finally {
    staging.destroy();
  }
}

/**
 * Write CPU bytes into an existing GPU buffer (for pre-allocated outputs of a
 * session that ran on wasm).
 * @param {any} device
 * @param {any} buffer
 * @param {Uint8Array} bytes
 */
export function writeBuffer(device, buffer, bytes) {
  if (!bytes.byteLength) return;
  const padded = bytes.byteLength % 4 ? new Uint8Array(Math.ceil(bytes.byteLength / 4) * 4) : bytes;
  if (padded !== bytes) padded.set(bytes);
  device.queue.writeBuffer(buffer, 0, padded.buffer, padded.byteOffset, padded.byteLength);
}
