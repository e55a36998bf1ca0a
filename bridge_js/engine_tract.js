// @ts-check
/**
 * The tract engine (tractjs 0.4.0: tract compiled to WebAssembly, CPU only), provider
 * `tract`. Its sessions (tract_session.js) are imported when a session first tries it.
 * @module engine_tract
 */

import * as engineFiles from './engine_files.js';
import { lazyCreate } from './lazy_engine.js';

/** The code imported when a session first tries tract. */
const CODE = ['./tract_session.js'];

/** @type {import('./engines.js').Engine} */
export const tractEngine = {
  name: 'tract',
  providers: ['tract'],
  skipReason: async () => (typeof Worker === 'undefined' ? 'this context cannot start a Web Worker, which the tract engine runs in' : ''),
  buildFor: () => 'tract',
  create: lazyCreate('tract', CODE, import.meta.url, engineFiles),
};
