// @ts-check
/**
 * Values Python holds as `ortweb.OrtValue` on the GPU: one registry entry each,
 * one owner each.
 *
 *  - owner 'ort': an output ORT allocated (`preferredOutputLocation`); released
 *    with `tensor.dispose()` (or `getData(true)`), which hands the buffer back to ORT.
 *  - owner 'ortweb': a buffer ortweb created (upload, pre-allocation); destroyed on dispose.
 *  - owner 'user': the user's GPUBuffer (`from_gpu_buffer`); never destroyed by ortweb.
 *
 * Tensors are built per use with the ORT module of the session that uses them,
 * because ORT-web recognises tensors by `instanceof` its own class.
 * @module values
 */

import { BridgeError } from './errors.js';
import { GPU_ITEMSIZE, bufferProblem, downloadBuffer, ortwebDevice } from './gpu.js';

/**
 * @typedef {object} ValueEntry
 * @property {'ort'|'ortweb'|'user'} owner
 * @property {string} type  ORT type name
 * @property {number[]} dims
 * @property {any} buffer   the GPUBuffer
 * @property {any} device   the GPUDevice the buffer belongs to (null when unknown)
 * @property {any} [tensor] the ORT tensor, for ORT-owned outputs
 */

/** @type {Map<number, ValueEntry>} */
const values = new Map();
let nextValue = 1;
let finalized = 0;

/** @param {ValueEntry} entry */
export function registerValue(entry) {
  const handle = nextValue++;
  values.set(handle, entry);
  return handle;
}

/**
 * @param {number} handle
 * @returns {ValueEntry}
 */
export function getValue(handle) {
  const found = values.get(handle);
  if (!found) throw new BridgeError('InvalidArgument', `OrtValue ${handle} was disposed`);
  return found;
}

/**
 * Bytes a tensor of `type` and `dims` occupies (ORT rounds buffer sizes up, so
 * `buffer.size` is never the answer).
 * @param {string} type
 * @param {number[]} dims
 */
export function byteLength(type, dims) {
  const itemsize = GPU_ITEMSIZE[type];
  if (!itemsize) throw new BridgeError('InvalidArgument', `tensor type '${type}' cannot live in a GPU buffer (ORT-web supports ${Object.keys(GPU_ITEMSIZE).join(', ')})`);
  return dims.reduce((a, b) => a * b, 1) * itemsize;
}

/**
 * Register a user's GPUBuffer; checks what can be checked synchronously.
 * @param {any} buffer
 * @param {string} type
 * @param {number[]} dims
 * @param {any} device ortweb's device when known
 */
export function valueFromUserBuffer(buffer, type, dims, device) {
  const problem = bufferProblem(buffer, byteLength(type, dims));
  if (problem) throw new BridgeError('InvalidArgument', `from_gpu_buffer: ${problem}`);
  return registerValue({ owner: 'user', type, dims: Array.from(dims), buffer, device });
}

/**
 * Dispose a value: ORT outputs go back to ORT, ortweb's buffers are destroyed,
 * users' buffers are left alone. A disposed handle is ignored.
 * @param {number} handle
 * @param {boolean} [byFinalizer] counted separately: a value Python forgot to dispose
 */
export function disposeValue(handle, byFinalizer = false) {
  const entry = values.get(handle);
  if (!entry) return false;
  values.delete(handle);
  if (byFinalizer) finalized += 1;
  if (entry.owner === 'ort') entry.tensor.dispose();
  else if (entry.owner === 'ortweb') entry.buffer.destroy();
  return true;
}

/**
 * Read a GPU value back to the CPU.
 * @param {number} handle
 * @param {boolean} release dispose the value after reading
 * @param {(entry: ValueEntry) => Promise<Uint8Array>} readBuffer reads a non-ORT buffer
 */
export async function readValue(handle, release, readBuffer) {
  const entry = getValue(handle);
  let data;
  if (entry.owner === 'ort') {
    // getData(true) releases the buffer on first download; a released entry is forgotten.
    data = await entry.tensor.getData(release);
    if (release) values.delete(handle);
  } else {
    const bytes = await readBuffer(entry);
    data = bytes;
    if (release) disposeValue(handle);
  }
  return { type: entry.type, dims: entry.dims, data };
}

/** Counts for leak accounting. */
export function valueStats() {
  const byOwner = { ort: 0, ortweb: 0, user: 0 };
  for (const v of values.values()) byOwner[v.owner] += 1;
  return { gpu: values.size, byOwner, finalized };
}

/**
 * The bytes of a GPU value ORT does not own, read on the device it lives on.
 * @param {ValueEntry} entry
 */
export async function entryBytes(entry) {
  const device = entry.device ?? await ortwebDevice();
  return downloadBuffer(device, entry.buffer, byteLength(entry.type, entry.dims));
}
