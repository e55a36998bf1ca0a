// @ts-check
/**
 * Meters for soak tests and leak hunting: live GPU buffers (count and bytes) and
 * the size of every WebAssembly memory in the page (ORT's heaps, Pyodide's).
 *
 * WebGPU and WebAssembly offer no inventory, so the bridge wraps
 * `GPUDevice.prototype.createBuffer` and `WebAssembly.instantiate(Streaming)` once,
 * before ORT or Pyodide load, and keeps weak references only.
 * @module meters
 */

/**
 * Live buffers: size by id, removed on destroy() or when the buffer is garbage
 * collected (weak references only: a meter must not keep buffers alive).
 * @type {Map<number, number>}
 */
const liveBuffers = new Map();
/** @type {WeakMap<object, number>} */
const bufferIds = new WeakMap();
let nextBuffer = 1;
const collected = new FinalizationRegistry((/** @type {number} */ id) => liveBuffers.delete(id));
/** @type {{label: string, memory: WeakRef<WebAssembly.Memory>}[]} */
const memories = [];

/** @param {any} instance @param {string} label */
function remember(instance, label) {
  for (const value of Object.values(instance?.exports ?? {})) {
    if (value instanceof WebAssembly.Memory && !memories.some((m) => m.memory.deref() === value)) {
      memories.push({ label, memory: new WeakRef(value) });
    }
  }
}

/** Wrap the allocation entry points once per page. */
export function installMeters() {
  const g = /** @type {any} */ (globalThis);
  if (g.__ortwebMeters) return;
  g.__ortwebMeters = true;
  const deviceProto = g.GPUDevice?.prototype;
  const bufferProto = g.GPUBuffer?.prototype;
  if (deviceProto && bufferProto) {
    const create = deviceProto.createBuffer;
    deviceProto.createBuffer = function createBuffer(/** @type {any} */ desc) {
      const buffer = create.call(this, desc);
      const id = nextBuffer++;
      liveBuffers.set(id, buffer.size);
      bufferIds.set(buffer, id);
      collected.register(buffer, id);
      return buffer;
    };
    const destroy = bufferProto.destroy;
    bufferProto.destroy = function destroyBuffer() {
      const id = bufferIds.get(this);
      if (id !== undefined) liveBuffers.delete(id);
      return destroy.call(this);
    };
  }
  const wasm = /** @type {any} */ (WebAssembly);
  // Emscripten builds with threads create their memory in JS and import it.
  const NativeMemory = wasm.Memory;
  const Memory = function Memory(/** @type {any} */ descriptor) {
    const memory = new NativeMemory(descriptor);
    memories.push({ label: 'memory', memory: new WeakRef(memory) });
    return memory;
  };
  Memory.prototype = NativeMemory.prototype;
  wasm.Memory = Memory;
  const instantiate = wasm.instantiate;
  wasm.instantiate = async (/** @type {any} */ source, /** @type {any} */ imports) => {
    const result = await instantiate(source, imports);
    remember(result.instance ?? result, 'wasm');
    return result;
  };
  const streaming = wasm.instantiateStreaming;
  if (streaming) {
    wasm.instantiateStreaming = async (/** @type {any} */ source, /** @type {any} */ imports) => {
      const response = await source;
      const result = await streaming(response, imports);
      remember(result.instance, response?.url?.split('/').pop() ?? 'wasm');
      return result;
    };
  }
}

/** Current readings. */
export function meters() {
  let gpuBytes = 0;
  for (const size of liveBuffers.values()) gpuBytes += size;
  const heaps = [];
  for (const { label, memory } of memories) {
    const m = memory.deref();
    if (m) heaps.push({ label, bytes: m.buffer.byteLength });
  }
  return {
    gpuBuffers: liveBuffers.size,
    gpuBufferBytes: gpuBytes,
    wasmMemories: heaps,
    wasmBytes: heaps.reduce((a, h) => a + h.bytes, 0),
  };
}
