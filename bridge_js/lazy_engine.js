// @ts-check
/**
 * Engines whose code is imported when a session first tries them, so that a page
 * that never names the engine downloads none of it. Each such engine's module lists
 * that code as `const CODE = [...]`; a site counts it out of the first visit
 * (py/ortweb/host/build/bridge_modules.py reads the lists, and a test keeps each equal
 * to what the module imports).
 *
 * That code imports nothing that reaches runtime.js: on a page whose import map pins
 * builds.json (a JSON module) with an `integrity`, as a --main-thread site's does,
 * Chromium 156's renderer crashes when a dynamic import reaches it again. What it needs
 * of the bridge is handed to its `create` instead (`handed`).
 * @module lazy_engine
 */

import { importChecked } from './runtime.js';

/**
 * The `create` of an engine whose sessions are made by the module `code[0]`.
 *
 * The code is imported once, after the page's module check (a site's worker checks
 * each module against its manifest); a module that cannot be imported (missing,
 * changed) makes the attempt a skip with the reason, so the provider policy falls
 * back, and the next session imports again.
 * @param {string} engine its name, for the reason
 * @param {string[]} code relative URLs: the module whose `create` makes the sessions,
 *   then every module it imports that the bridge does not load at start-up
 * @param {string} base the engine module's `import.meta.url`
 * @param {any} handed what the code's `create` gets of the bridge, as a fifth argument
 * @returns {import('./engines.js').Engine['create']}
 */
export function lazyCreate(engine, code, base, handed) {
  const urls = code.map((f) => new URL(f, base).href);
  /** @type {Promise<any>|null} */
  let loaded = null;
  return async (bytes, provider, options, epOptions) => {
    if (!loaded) {
      loaded = importChecked(urls);
      loaded.catch(() => { loaded = null; });
    }
    let module;
    try {
      module = await loaded;
    } catch (err) {
      return { skip: `the ${engine} engine's code ${urls[0]} could not be loaded: ${err instanceof Error ? err.message : err}` };
    }
    return module.create(bytes, provider, options, epOptions, handed);
  };
}
