// @ts-check
/**
 * The flat form of `run`'s feeds and outputs: the per-call path between Python and
 * the bridge.
 *
 * Every JS array or object Python builds, and every one it reads, is a crossing of
 * the Pyodide boundary (microseconds each, more than a tiny wasm run's own work).
 * So a run's feeds travel as the call's own arguments (numbers and strings convert
 * in C, with no array built) and its outputs come back as one flat array that
 * Python converts in one step.
 *
 * Feeds, one after another: `name, type, ndim, dim_0 … dim_ndim-1, data` for CPU
 * data (a typed array), `name, null, valueHandle` for a GPU value.
 *
 * Outputs, one per fetch in order: `type, valueHandle, data, fresh, ndim, dim_0 …`,
 * with `data` for a CPU output and null for a GPU one, `valueHandle` the other way
 * round, and `fresh` when ORT made the GPU value (nobody owns it yet).
 * @module wire
 */

/**
 * @typedef {object} Feed
 * @property {string} name
 * @property {string} [type]
 * @property {number[]} [dims]
 * @property {any} [data]
 * @property {number} [value] handle of a GPU value
 */

/**
 * Feeds from their flat form.
 * @param {any[]} flat
 * @returns {Feed[]}
 */
export function readFeeds(flat) {
  const feeds = [];
  let i = 0;
  while (i < flat.length) {
    const name = flat[i];
    const type = flat[i + 1];
    if (type === null || type === undefined) {
      feeds.push({ name, value: flat[i + 2] });
      i += 3;
      continue;
    }
    const ndim = flat[i + 2];
    const dims = flat.slice(i + 3, i + 3 + ndim);
    feeds.push({ name, type, dims, data: flat[i + 3 + ndim] });
    i += 4 + ndim;
  }
  return feeds;
}

/**
 * Outputs (as `runSession` gives them) in their flat form.
 * @param {Array<{type: string, value: number|null, data?: any, fresh?: boolean, dims: number[]}>} outputs
 */
export function writeOutputs(outputs) {
  const flat = [];
  for (const out of outputs) {
    const cpu = out.value === null || out.value === undefined;
    flat.push(out.type, cpu ? null : out.value, cpu ? out.data : null, out.fresh === true, out.dims.length, ...out.dims);
  }
  return flat;
}

/**
 * The handles of the GPU values ORT made, from outputs in flat form (for clean-up
 * when nobody will take them).
 * @param {any[]} flat
 * @returns {number[]}
 */
export function freshValues(flat) {
  const handles = [];
  for (let i = 0; i < flat.length; i += 5 + flat[i + 4]) {
    if (flat[i + 3]) handles.push(flat[i + 1]);
  }
  return handles;
}
