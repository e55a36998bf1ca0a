// @ts-check
/**
 * A small persistent key → JSON store for choices worth remembering across page
 * loads (the provider `"auto"` picked for a model). Cache Storage works in pages
 * and in workers (JupyterLite's kernel) in secure contexts; elsewhere the store
 * lives as long as the page.
 * @module store
 */

const CACHE = 'ortweb-choices-v1';
const PREFIX = 'https://ortweb.invalid/choice/';
/** @type {Map<string, any>} */
const memory = new Map();

/** @returns {boolean} */
export function persistent() {
  return typeof globalThis.caches !== 'undefined';
}

/**
 * @param {string} key
 * @returns {Promise<any|null>}
 */
export async function getChoice(key) {
  if (!persistent()) return memory.get(key) ?? null;
  const cache = await caches.open(CACHE);
  const hit = await cache.match(PREFIX + encodeURIComponent(key));
  return hit ? hit.json() : null;
}

/**
 * @param {string} key
 * @param {any} value JSON-serialisable
 */
export async function putChoice(key, value) {
  if (!persistent()) {
    memory.set(key, value);
    return;
  }
  const cache = await caches.open(CACHE);
  // The URL is only a cache key: nothing is ever fetched from it.
  await cache.put(PREFIX + encodeURIComponent(key), new Response(JSON.stringify(value), {
    headers: { 'Content-Type': 'application/json' },
  }));
}
