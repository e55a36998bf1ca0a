// @ts-check
/**
 * Error envelopes: every bridge call resolves to `{ok: true, value}` or
 * `{ok: false, error: {name, message, code}}`, so Python sees one shape and
 * translates it once (py/ortweb/errors.py).
 * @module errors
 */

/**
 * @typedef {object} ErrorEnvelope
 * @property {string} name     JS error name, or an ortweb category such as "ProviderUnavailable".
 * @property {string} message  Human-readable text, ORT's own text kept.
 * @property {number|null} code onnxruntime status code when ORT gave one.
 * @property {Object<string,string>} [reasons] per-provider reasons, for ProviderUnavailable.
 */

/**
 * What every asynchronous bridge call resolves to.
 * @template T
 * @typedef {{ok: true, value: T} | {ok: false, error: ErrorEnvelope}} Envelope
 */

/** An error raised by the bridge itself, with an ortweb category name. */
export class BridgeError extends Error {
  /**
   * @param {string} name
   * @param {string} message
   * @param {number|null} [code]
   * @param {Object<string,string>} [reasons]
   */
  constructor(name, message, code = null, reasons = undefined) {
    super(message);
    this.name = name;
    this.code = code;
    this.reasons = reasons;
  }
}

const CODE_IN_TEXT = /ERROR_CODE:\s*(\d+)/;

/**
 * Turn anything thrown (Error, string, number from a wasm abort) into an envelope.
 * @param {unknown} err
 * @returns {ErrorEnvelope}
 */
export function toEnvelope(err) {
  if (err instanceof Error) {
    const anyErr = /** @type {any} */ (err);
    let code = typeof anyErr.code === 'number' ? anyErr.code : null;
    const found = CODE_IN_TEXT.exec(err.message);
    if (code === null && found) code = Number(found[1]);
    /** @type {ErrorEnvelope} */
    const env = { name: err.name || 'Error', message: err.message || String(err), code };
    if (anyErr.reasons) env.reasons = anyErr.reasons;
    return env;
  }
  return { name: 'Error', message: String(err), code: null };
}

/**
 * @template T
 * @param {T} value
 * @returns {{ok: true, value: T}}
 */
export function ok(value) {
  return { ok: true, value };
}

/**
 * @param {unknown} err
 * @returns {{ok: false, error: ErrorEnvelope}}
 */
export function fail(err) {
  return { ok: false, error: toEnvelope(err) };
}

/**
 * Run `fn` and wrap its result or error in an envelope; never rejects.
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<Envelope<T>>}
 */
export async function enveloped(fn) {
  try {
    return ok(await fn());
  } catch (err) {
    return fail(err);
  }
}
