// @ts-check
/**
 * Tensor encoding between Python's wire arrays and ORT-web tensors.
 *
 * Python allocates nothing in JS itself: it asks for a typed array here and copies
 * its numpy bytes into it (`JsBuffer.assign`), so every dtype gets the typed array
 * ORT-web expects (int64 → BigInt64Array, bool → Uint8Array, float16 → Uint16Array).
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

/**
 * A new zeroed typed array of `length` elements for ORT type `type`.
 * @param {string} type
 * @param {number} length
 */
export function allocate(type, length) {
  const Ctor = TYPED_ARRAYS[type];
  if (!Ctor) throw new TypeError(`no typed array for tensor type '${type}'`);
  return new Ctor(length);
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
