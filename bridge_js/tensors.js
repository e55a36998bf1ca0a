// @ts-check
/**
 * Tensor encoding between Python's wire arrays and ORT-web tensors.
 *
 * A feed of 8 KiB or more goes into a typed array asked for here (`allocate`, reused
 * from earlier runs) with `JsBuffer.assign`; a smaller one Python copies with
 * `to_js` in one call. Either way every dtype gets the typed array ORT-web expects
 * (int64 → BigInt64Array, bool → Uint8Array, float16 → Uint16Array).
 * On the way back, a Float16Array is handed over as Uint16Array bits because
 * Pyodide 0.27.7 cannot read Float16Array.
 * @module tensors
 */

/** @type {Object<string, any>} */
const TYPED_ARRAYS = {
  float32: Float32Array,
  float64: Float64Array,
  float16: Uint16Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  int64: BigInt64Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
  uint64: BigUint64Array,
  bool: Uint8Array,
};

/** Staging arrays waiting for reuse, by `type:length`. */
const pool = new Map();
let pooledBytes = 0;
/** Below this, allocating is cheaper than keeping arrays around. */
const POOL_MIN_BYTES = 8 * 1024;
/** At most this much is kept for reuse. */
const POOL_MAX_BYTES = 256 * 1024 * 1024;

/**
 * A typed array of `length` elements for ORT type `type`, reused from earlier
 * runs when one of that size is free: writing into memory already touched runs
 * at memcpy speed, while every new JS buffer pays for a first touch, several times
 * slower.
 * Its previous contents are overwritten by the caller before use.
 * @param {string} type
 * @param {number} length
 */
export function allocate(type, length) {
  const Ctor = TYPED_ARRAYS[type];
  if (!Ctor) throw new TypeError(`no typed array for tensor type '${type}'`);
  const free = pool.get(`${type}:${length}`);
  if (free && free.length) {
    const array = free.pop();
    pooledBytes -= array.byteLength;
    return array;
  }
  return new Ctor(length);
}

/**
 * Give a staging array back once ORT has copied it into its heap (after `run`).
 * @param {string} type
 * @param {any} array
 */
export function recycle(type, array) {
  if (!ArrayBuffer.isView(array) || array.byteLength < POOL_MIN_BYTES) return;
  if (pooledBytes + array.byteLength > POOL_MAX_BYTES) return;
  const key = `${type}:${/** @type {any} */ (array).length}`;
  const free = pool.get(key) ?? [];
  free.push(array);
  pool.set(key, free);
  pooledBytes += array.byteLength;
}

/** Bytes held for reuse. */
export function pooled() {
  return pooledBytes;
}

/**
 * View `data` (a typed array of any kind, or bytes) as the typed array Python reads
 * for `type`: float16 as Uint16Array bits, bool as Uint8Array.
 * @param {string} type
 * @param {any} data
 */
export function viewAs(type, data) {
  if (type === 'string') return data;
  const Ctor = TYPED_ARRAYS[type];
  if (data instanceof Ctor) return data;
  return new Ctor(data.buffer, data.byteOffset, data.byteLength / Ctor.BYTES_PER_ELEMENT);
}

/**
 * The bytes of a typed array, without copying.
 * @param {any} data
 */
export function bytesOf(data) {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

/**
 * Build an ORT tensor of the module `ort` (tensors of another build are not
 * recognised by `instanceof` checks inside ORT).
 * @param {any} ort
 * @param {string} type
 * @param {any} data typed array, or string[] for 'string'
 * @param {number[]} dims
 */
export function makeTensor(ort, type, data, dims) {
  return new ort.Tensor(type, data, dims);
}

/**
 * @typedef {object} DecodedTensor
 * @property {string} name
 * @property {string} type
 * @property {number[]} dims
 * @property {any} data typed array Python can read, or string[]
 */

/**
 * Describe an ORT CPU tensor for Python.
 * @param {string} name
 * @param {any} tensor
 * @returns {DecodedTensor}
 */
export function decodeTensor(name, tensor) {
  return { name, type: tensor.type, dims: Array.from(tensor.dims, Number), data: viewAs(tensor.type, tensor.data) };
}
