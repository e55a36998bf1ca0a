// @ts-check
/**
 * The other engines' files: fetched when a session first tries an engine (never at
 * start-up), and run only if they match their sha256, the pins of assets.lock.json's
 * `engines` (set-up checks the same pins; tests/test_engines_units.py keeps the two
 * equal). A missing or changed file is a named error of that engine's attempt, so the
 * provider policy falls back where it allows.
 * @module engine_files
 */

import { BridgeError } from './errors.js';
import { sha256Hex } from './fetching.js';
import { config } from './runtime.js';

/** @type {Readonly<Record<string, string>>} path under enginesBaseURL → sha256 */
export const ENGINE_PINS = Object.freeze({
  'tract/tract-worker.js': '501ca2ddcb349c2791c2a0fdfac95cc7207d4decb89ecb174c37c5c5e0687c21',
  'wonnx/wonnx.js': 'ff200b5131b6b23c96a47f20ac1eaaf70d10e895efdf470103939405d7bbc7e5',
  'wonnx/wonnx_bg.wasm': 'bc6d4870b8163c17a62e9148da92b8fcd638f44bb02df427447d140c31a8ed24',
});

/**
 * The bytes of an engine's file, checked against its pin.
 * @param {string} rel a key of ENGINE_PINS ('tract/tract-worker.js')
 * @returns {Promise<Uint8Array>}
 */
export async function engineFile(rel) {
  const engine = rel.split('/')[0];
  const url = config.enginesBaseURL + rel;
  const pin = ENGINE_PINS[rel];
  if (!pin) throw new BridgeError('EngineFailed', `no pinned sha256 for the ${engine} engine's file ${rel}`);
  let response;
  try {
    response = await fetch(url);
  } catch (err) {
    throw new BridgeError('EngineFailed', `the ${engine} engine's file ${url} could not be fetched: ${err instanceof Error ? err.message : err}`);
  }
  if (!response.ok) {
    throw new BridgeError('EngineFailed', `the ${engine} engine's file ${url} is missing (HTTP ${response.status}): the page looks for the engines in ${config.enginesBaseURL} (a site ships them with ortweb site --providers ${engine})`);
  }
  const bytes = new Uint8Array(await response.arrayBuffer());
  const got = await sha256Hex(bytes);
  if (got !== pin) {
    throw new BridgeError('EngineFailed', `the ${engine} engine's file ${url} has sha256 ${got}, not the pinned ${pin}: it was changed, and ortweb does not run it`);
  }
  return bytes;
}

/**
 * A URL of `bytes` as a JavaScript file, so that the checked bytes are what runs
 * (not a second download); the caller revokes it.
 * @param {Uint8Array} bytes
 */
export function scriptURL(bytes) {
  return URL.createObjectURL(new Blob([/** @type {Uint8Array<ArrayBuffer>} */ (bytes)], { type: 'text/javascript' }));
}
