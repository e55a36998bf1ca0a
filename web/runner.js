// @ts-check
/**
 * The page the host tools drive (`ortweb run`, `ortweb exec`, the tests): loads
 * Pyodide, numpy and ortweb from this server only, installs the bridge, and exposes
 * a few entry points for Playwright. Python's stdout/stderr go to the console with
 * a tag the host recognises.
 */
import { printTagged } from '../bridge/console_tag.js';
import { installBridge } from '../bridge/index.js';
import { bootPyodide, unpackBytecode } from '../bridge/pyodide_boot.js';
import { decodeUnpacked, unpackWith } from '../bridge/unpacking.js';

const params = new URLSearchParams(location.search);
const providers = params.get('providers');
installBridge({
  ortBaseURL: new URL('../ort/', import.meta.url).href,
  webgpuBuild: params.get('webgpuBuild') ?? 'native',
  defaultProviders: providers ? providers.split(',') : null,
});

const status = /** @type {HTMLElement} */ (document.getElementById('status'));

/** @type {any} */
let pyodide = null;

/** @type {any} */
const w = window;

/**
 * Put this page under runner-sw.js (the asset cache of a browser elsewhere, see there)
 * before anything large is fetched; later pages of the context start under it.
 */
async function underAssetCache() {
  const container = navigator.serviceWorker;
  if (!container) throw new Error('assetCache=sw: this browser has no service workers');
  if (container.controller) return;
  const claimed = new Promise((resolve) => container.addEventListener('controllerchange', resolve, { once: true }));
  await container.register(new URL('./runner-sw.js', import.meta.url).href);
  const late = new Promise((resolve) => setTimeout(() => resolve('late'), 30000));
  if (await Promise.race([claimed, late]) === 'late') {
    console.warn('ortweb: the asset cache (runner-sw.js) did not take this page in 30 s; its files are relayed');
  }
}

/**
 * What the host made for these pages (see `ortweb.host.build.runner_snapshot`): the
 * interpreter's memory snapshot (null when this browser's JSPI differs from the one it
 * was made with), the packages' bytecode and the record of what their wheels unpack to
 * (each null when none was made), each a promise; null when none is offered
 * (`?snapshot=0`, a plain boot, or the server has none).
 * @returns {Promise<{snapshot: Promise<Uint8Array|null>, bytecode: Promise<Uint8Array|null>,
 *   unpacked: Promise<Uint8Array|null>}|null>}
 */
async function runnerMade() {
  if (params.get('snapshot') === '0') return null;
  const base = new URL('../snapshot/', import.meta.url).href;
  const about = await fetch(base + 'snapshot.json');
  if (!about.ok) return null;
  const { jspi, file, bytecode, unpacked } = await about.json();
  const read = async (/** @type {string} */ name, /** @type {boolean} */ gzipped) => {
    const response = await fetch(base + name);
    if (!response.ok || !response.body) return null;
    const body = gzipped ? response.body.pipeThrough(new DecompressionStream('gzip')) : response.body;
    return new Uint8Array(await new Response(body).arrayBuffer());
  };
  return {
    snapshot: jspi in WebAssembly ? read(file, true) : Promise.resolve(null),
    bytecode: bytecode ? read(bytecode, false) : Promise.resolve(null),
    // Not for a browser elsewhere (`?unpacked=0`): every file reaches it through the
    // host's relay, and the record, four times the wheels' bytes, would cost more there
    // than the unzipping it saves.
    unpacked: unpacked && params.get('unpacked') !== '0' ? read(unpacked, false) : Promise.resolve(null),
  };
}

w.ortwebReady = (async () => {
  try {
    if (params.get('assetCache') === 'sw') await underAssetCache();
    const boot = {
      indexURL: new URL('../pyodide/', import.meta.url).href,
      offlineListURL: new URL('../pyodide/offline-packages.json', import.meta.url).href,
      stdout: (/** @type {string} */ line) => printTagged('stdout', line),
      stderr: (/** @type {string} */ line) => printTagged('stderr', line),
      progress: (/** @type {string} */ msg) => { status.textContent = msg; },
    };
    /** @type {'snapshot'|'fresh'} */
    let bootedFrom = 'fresh';
    const made = await runnerMade().catch((err) => {
      console.warn('ortweb: the runner snapshot could not be read; booting Pyodide as usual', err);
      return null;
    });
    const bytecode = made?.bytecode.catch((err) => {
      console.warn('ortweb: the packages\' bytecode could not be read; Python compiles their source', err);
      return null;
    });
    const kept = made?.unpacked.then((bytes) => (bytes ? decodeUnpacked(bytes) : null)).catch((err) => {
      console.warn('ortweb: the record of the unpacked wheels could not be read; Pyodide unpacks them', err);
      return null;
    });
    /** @type {'kept'|'wheels'} where the packages' files came from */
    let packagesFrom = 'wheels';
    /** @param {any} booted */
    boot.aroundPackages = async (booted) => {
      const wheels = await kept;
      if (!wheels) return () => {};
      const unpacking = unpackWith(booted, wheels);
      return () => {
        unpacking.restore();
        packagesFrom = unpacking.used.length ? 'kept' : 'wheels';
      };
    };
    const snapshot = await made?.snapshot.catch((err) => {
      console.warn('ortweb: the runner snapshot could not be read; booting Pyodide as usual', err);
      return null;
    });
    if (snapshot) {
      try {
        pyodide = await bootPyodide({ ...boot, loadOptions: { _loadSnapshot: snapshot } });
        bootedFrom = 'snapshot';
      } catch (err) {
        console.warn('ortweb: the runner snapshot did not restore; booting Pyodide as usual', err);
      }
    }
    pyodide ??= await bootPyodide(boot);
    const bytes = await bytecode;
    if (bytes) unpackBytecode(pyodide, bytes);
    w.pyodide = pyodide;
    status.textContent = 'ready';
    return { ok: true, bootedFrom, packagesFrom };
  } catch (err) {
    status.textContent = `failed: ${err}`;
    return { ok: false, message: String(err && /** @type {any} */ (err).stack || err) };
  }
})();

/**
 * Run Python source with runPythonAsync (so JSPI's run_sync works inside it).
 * @param {string} code
 * @param {string} filename
 * @param {any} [globals] a Python dict to run in (default: the main module's)
 * @returns {Promise<{ok: boolean, value?: any, type?: string, message?: string}>}
 */
w.ortwebRunPython = async (code, filename = '<ortweb>', globals = null) => {
  try {
    let value = await pyodide.runPythonAsync(code, globals ? { filename, globals } : { filename });
    if (value && typeof value.toJs === 'function') {
      const proxy = value;
      value = proxy.toJs({ dict_converter: Object.fromEntries });
      proxy.destroy();
    }
    return { ok: true, value };
  } catch (err) {
    const e = /** @type {any} */ (err);
    return { ok: false, type: e.type ?? e.name, message: String(e.message ?? e) };
  }
};

/**
 * Fetch `url` from the server and write it into Pyodide's file system at `path`.
 * @param {string} url
 * @param {string} path
 */
w.ortwebWriteFile = async (url, path) => {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`cannot fetch ${url}: HTTP ${response.status}`);
  const data = new Uint8Array(await response.arrayBuffer());
  const dir = path.slice(0, path.lastIndexOf('/'));
  if (dir) pyodide.FS.mkdirTree(dir);
  pyodide.FS.writeFile(path, data);
  return data.length;
};

/**
 * Read a file of Pyodide's file system as base64 (for the host).
 * @param {string} path
 */
w.ortwebReadFile = (path) => {
  const data = pyodide.FS.readFile(path);
  let text = '';
  for (let i = 0; i < data.length; i += 0x8000) {
    text += String.fromCharCode.apply(null, Array.from(data.subarray(i, i + 0x8000)));
  }
  return btoa(text);
};
