// @ts-check
/**
 * A site's Python, in the page (`--main-thread`) or in its Web Worker (`--worker`):
 * boots Pyodide with numpy and ortweb, installs the site's wheels (`--wheel`,
 * verified like every file) with micropip and no package index, writes the model,
 * the script and its files into the working directory, runs the script (top-level
 * await) and calls the Python functions it defined.
 * @module python
 */
import { installBridge } from './bridge/index.js';
import { bootPyodide, unpackBytecode } from './bridge/pyodide_boot.js';
import { BUILDS, buildFiles } from './bridge/runtime.js';
import { firstBuild } from './bridge/sessions.js';
import { unpackWith } from './bridge/unpacking.js';

/**
 * @typedef {object} PythonIO what Python's side tells the page
 * @property {(stream: string, line: string) => void} print
 * @property {(text: string) => void} status
 * @property {(name: string) => void} mark
 * @property {(data: any) => void} post  `ortweb_page.post(data)`
 */

/** @param {{type?: string, message?: string, traceback?: string}} envelope */
export function pythonError(envelope) {
  const err = new Error(envelope.message ?? envelope.type ?? 'Python error');
  err.name = envelope.type ?? 'PythonError';
  /** @type {any} */ (err).pythonTraceback = envelope.traceback ?? '';
  return err;
}

/** A model of one Neg node (float [1]): the session that starts onnxruntime-web early. */
const WARM_MODEL = 'CAgSADoyCgsKAXgSAXkiA05lZxIBd1oPCgF4EgoKCAgBEgQKAggBYg8KAXkSCgoICAESBAoCCAFCBAoAEBE=';

/**
 * Start onnxruntime-web for the page's default providers while Pyodide boots: the
 * build the script's first session will use is imported, its wasm fetched and
 * compiled and its runtime (threads, WebGPU device) started, on a one-node model
 * released at once. A failure here only means the script's session does it later.
 * @param {any} bridge
 * @param {string[]} providers
 */
function warmOrt(bridge, providers) {
  const bytes = Uint8Array.from(atob(WARM_MODEL), (c) => c.charCodeAt(0));
  return bridge.createSession(bytes, providers, {}).then(async (/** @type {any} */ envelope) => {
    if (envelope.ok) await bridge.release(envelope.value.handle);
  }).catch(() => {});
}

/**
 * Start the site's Python; resolves once the script has run.
 * @param {any} config the page's config
 * @param {import('./loader.js').Loader} loader
 * @param {PythonIO} io
 * @param {{beforeBoot?: Promise<any>, snapshot?: Promise<Uint8Array|null>,
 *   snapshotFailed?: (err: any) => Promise<void>,
 *   unpacked?: Promise<Map<string, import('./bridge/unpacking.js').Unpacked>|null>}} [options]
 *   `beforeBoot`: awaited before Pyodide's modules are imported (the worker checks them
 *   meanwhile); `snapshot`: a memory snapshot of the interpreter to boot from
 *   (snapshot.js), booting as usual when it fails to restore (said on the console;
 *   `snapshotFailed` hears why); `unpacked`: wheels an earlier visit kept unpacked
 *   (unpacked.js), written instead of unpacked
 */
export async function startPython(config, loader, io, options = {}) {
  const { absolute } = loader;
  const bridge = installBridge({
    ortBaseURL: absolute(config.ortBaseURL),
    webgpuBuild: config.webgpuBuild,
    defaultProviders: config.providers,
  });
  // Everything the first inference needs downloads at once, side by side: Pyodide's
  // core files and wheels (its own fetches then find them), the app's files, and
  // onnxruntime-web, which also compiles and starts while Pyodide boots.
  const indexURL = absolute(config.pyodide.indexURL);
  loader.prefetch(config.assets.map((/** @type {any} */ a) => a.url)
    .filter((/** @type {string} */ url) => absolute(url).startsWith(indexURL)));
  if (config.warmOrt !== false) {
    // The wasm of the build the first session loads (WebGPU's only where there is an
    // adapter) comes with them, not only once onnxruntime-web's JS is checked,
    // imported and started.
    firstBuild(config.providers).then((build) => {
      // Only onnxruntime-web warms up on a model of its own: the other engines start
      // with the script's session, and nothing of them downloads before.
      if (!build || !BUILDS[build]) return;
      loader.prefetch([buildFiles(build).wasm]);
      // Not awaited: the script's first session queues behind it in the bridge.
      warmOrt(bridge, config.providers);
    }, () => {});
  }
  // What the script's `ortweb_page` module talks to (site_page.py).
  /** @type {any} */ (globalThis).ortwebPage = {
    /** @param {any} data */
    post: (data) => io.post(data),
    /** @param {string} text */
    status: (text) => io.status(String(text)),
  };
  io.status('loading Pyodide…');
  // The model's external data files (config.data) go beside it, under their names.
  const files = [config.model, config.script, ...config.files, ...(config.data ?? [])];
  // The app's files download while Pyodide starts.
  const fileBytes = Promise.all(files.map((f) => loader.bytesOf(f.url)));
  fileBytes.catch(() => {});
  const own = [config.runner, ...(config.page ? [config.page] : [])];
  const ownBytes = Promise.all(own.map((f) => loader.bytesOf(f.url)));
  ownBytes.catch(() => {});
  /** @type {import('./loader.js').Asset[]} */
  const wheels = config.wheels ?? [];
  const wheelBytes = Promise.all(wheels.map((w) => loader.bytesOf(w.url)));
  wheelBytes.catch(() => {});
  const installerBytes = config.installer ? loader.bytesOf(config.installer.url) : null;
  installerBytes?.catch(() => {});
  // The packages' bytecode, compiled at build time (ortweb.host.build.pyodide_bytecode):
  // like the snapshot, only where the service worker holds it already (a later visit).
  const bytecodeBytes = config.bytecode
    ? loader.stored(config.bytecode.url).then((at) => (at ? loader.bytesOf(config.bytecode.url) : null))
    : null;
  bytecodeBytes?.catch(() => {});
  // The lock downloads while the worker checks Pyodide's modules.
  const lock = lockFileURL(absolute(config.pyodide.lockURL));
  lock.catch(() => {});
  await options.beforeBoot;
  /** @type {ReturnType<typeof unpackWith>|null} */
  let unpacking = null;
  const boot = {
    indexURL,
    lockFileURL: await lock,
    packages: config.packages,
    stdout: (/** @type {string} */ line) => io.print('stdout', line),
    stderr: (/** @type {string} */ line) => io.print('stderr', line),
    progress: (/** @type {string} */ msg) => {
      // Pyodide's core is up (booted or restored); its packages load next.
      if (msg !== 'loading Pyodide') io.mark('interpreter');
      io.status(`${msg}…`);
    },
    /** @param {any} booted */
    aroundPackages: async (booted) => {
      // Read while Pyodide restored or booted.
      const current = unpackWith(booted, (await options.unpacked) ?? null);
      unpacking = current;
      return () => current.restore();
    },
  };
  /** @type {any} */
  let pyodide = null;
  /** @type {'snapshot'|'fresh'} */
  let bootedFrom = 'fresh';
  const snapshot = await options.snapshot;
  io.mark('boot');
  if (snapshot) {
    try {
      // bootPyodide gives the restored interpreter what a fresh boot would have
      // (random's seed, LANG, the time zone).
      pyodide = await bootPyodide({ ...boot, loadOptions: { _loadSnapshot: snapshot } });
      bootedFrom = 'snapshot';
    } catch (err) {
      pyodide = null;
      console.warn('ortweb: the memory snapshot did not restore; booting Pyodide as usual', err);
      await options.snapshotFailed?.(err);
    }
  }
  pyodide ??= await bootPyodide(boot);
  io.mark('pyodide');
  const bytes = await bytecodeBytes;
  if (bytes) {
    // Kept with the wheels (unpacked.js): its files all go under /lib.
    const write = () => unpackBytecode(pyodide, bytes);
    // Set by aroundPackages, which TypeScript cannot see run.
    const recorder = /** @type {ReturnType<typeof unpackWith>|null} */ (unpacking);
    if (recorder) recorder.archive(`bytecode ${config.bytecode.sha256}`, '/lib', write);
    else write();
  }
  if (wheels.length && installerBytes) {
    io.status(`installing ${wheels.map((w) => w.name).join(', ')}…`);
    await installWheels(pyodide, wheels, await wheelBytes, await installerBytes);
    io.mark('wheels');
  }
  if (config.packages.includes('ortweb')) {
    // The script's first import, done while its files may still be downloading (a
    // first visit's model comes last): numpy comes with it. One that fails is left to
    // the script's own import, which reports it with the script's traceback.
    try {
      pyodide.runPython('import ortweb');
    } catch {
      // Reported by the script's import.
    }
    io.mark('imported');
  }
  const cwd = config.cwd;
  pyodide.FS.mkdirTree(cwd);
  const loaded = await fileBytes;
  files.forEach((f, i) => {
    const path = `${cwd}/${f.name}`;
    // An external data file's location may hold folders.
    pyodide.FS.mkdirTree(path.slice(0, path.lastIndexOf('/')));
    pyodide.FS.writeFile(path, loaded[i]);
  });
  const [runnerSource, pageSource] = await ownBytes;
  pyodide.FS.mkdirTree('/ortweb_site');
  pyodide.FS.writeFile('/ortweb_site/_ortweb_site.py', runnerSource);
  if (pageSource) pyodide.FS.writeFile('/ortweb_site/ortweb_page.py', pageSource);
  pyodide.runPython("import sys\nif '/ortweb_site' not in sys.path: sys.path.append('/ortweb_site')");
  const runner = pyodide.pyimport('_ortweb_site');
  // One proxy for every call; fetching `runner.call` each time would leak one per call.
  const runnerCall = runner.call;
  io.status(`running ${config.script.name}…`);
  io.mark('script');
  const spec = {
    // Relative, so that tracebacks say `File "app.py"` as `python app.py` would.
    path: config.script.name,
    cwd,
    argv: [config.script.name],
    env: {
      ORTWEB_MODEL: config.model.name,
      ORTWEB_MODEL_URL: absolute(config.model.url),
      ORTWEB_PROVIDERS: config.providers.join(','),
    },
  };
  const result = JSON.parse(await runner.run_script(JSON.stringify(spec)));
  /** @type {string[]} */
  const functions = result.functions;
  if (!result.ok) {
    io.print('stderr', result.traceback.trimEnd());
    throw pythonError(result);
  }
  return {
    pyodide,
    functions,
    /** Whether Pyodide was restored from a memory snapshot or booted as usual. */
    bootedFrom,
    /** What the packages' unpacking did (unpacked.js), to keep for the next visit. */
    unpacking,
    /**
     * Call a function the script defined: its envelope (`{ok, value}` with plain JS
     * values, or `{ok: false, type, message, traceback}`).
     * @param {string} name @param {any[]} args
     * @returns {Promise<any>}
     */
    call: (name, args) => runnerCall(name, args),
  };
}

/**
 * The lock file with every package URL made absolute (relative names are relative
 * to the lock itself), at a blob: URL.
 * @param {string} url
 */
async function lockFileURL(url) {
  const lock = await (await fetch(url)).json();
  for (const pkg of Object.values(lock.packages)) {
    /** @type {any} */ (pkg).file_name = new URL(/** @type {any} */ (pkg).file_name, url).href;
  }
  return URL.createObjectURL(new Blob([JSON.stringify(lock)], { type: 'application/json' }));
}

/**
 * Install the site's wheels with micropip (install_wheels.py): their bytes were
 * checked against the manifest on download; the Pyodide packages they need were
 * loaded with the others at boot.
 * @param {any} pyodide
 * @param {import('./loader.js').Asset[]} wheels in install order
 * @param {Uint8Array[]} bytes
 * @param {Uint8Array} installer the source of install_wheels.py
 */
async function installWheels(pyodide, wheels, bytes, installer) {
  const dir = '/tmp/ortweb-wheels';
  pyodide.FS.mkdirTree(dir);
  // micropip reads the name, version and tags from the file name: keep it.
  const paths = wheels.map((w, i) => {
    pyodide.FS.writeFile(`${dir}/${w.name}`, bytes[i]);
    return `${dir}/${w.name}`;
  });
  const scope = pyodide.globals.get('dict')();
  try {
    scope.set('ORTWEB_INSTALL', JSON.stringify({ wheels: paths, requirements: [], packages: [] }));
    await pyodide.runPythonAsync(new TextDecoder().decode(installer),
      { globals: scope, filename: 'install_wheels.py' });
  } catch (err) {
    const e = /** @type {any} */ (err);
    const error = new Error(`installing the site's wheels failed: ${e.message ?? e}`);
    error.name = e.type ?? 'PythonError';
    /** @type {any} */ (error).pythonTraceback = String(e.message ?? e);
    throw error;
  } finally {
    scope.destroy();
  }
}
