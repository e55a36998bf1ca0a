// @ts-check
/**
 * Where ORT placed each node: read from ORT's own verbose log while a session is
 * created ("Node placements" from VerifyEachNodeIsAssignedToAnEp), so the report
 * names exactly the nodes that a GPU session runs on the CPU.
 *
 * ORT's wasm logger writes to the console, and Emscripten binds the console
 * methods when a build loads. So the bridge installs a tap on the console once,
 * before any ORT build loads (`installConsoleTap`); a capture then diverts what
 * reaches the tap for the duration of one `InferenceSession.create`, which the
 * page queue runs alone.
 *
 * A session keeps the log level it was created with: its EPs log through the
 * session's logger, whatever level a run asks for. A WebGPU session created at the
 * verbose level would print a line per kernel on every run (the native EP's
 * "Starting program"). So calls into ORT run inside `atLogLevel`, and while any
 * does, the tap drops ORT's lines below the lowest level those calls asked for.
 * @module placement
 */

const METHODS = /** @type {const} */ (['log', 'info', 'warn', 'error', 'debug']);

/** ORT's severity letters and `env.logLevel` names → its severity levels. */
export const SEVERITY = /** @type {Object<string, number>} */ ({
  V: 0, I: 1, W: 2, E: 3, F: 4, verbose: 0, info: 1, warning: 2, error: 3, fatal: 4,
});

/**
 * A line of ORT's logger: its time stamp, then `[SEVERITY:onnxruntime:...]`; warnings
 * and errors come after a terminal colour code.
 */
const ORT_LINE = /^(?:\x1b\[[\d;]*m)?\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+ \[([VIWEF]):onnxruntime:/;

/**
 * The severity level of one of ORT's log lines; null for any other line.
 * @param {string} line
 * @returns {number|null}
 */
export function ortSeverity(line) {
  const found = ORT_LINE.exec(line);
  return found === null ? null : SEVERITY[found[1]];
}

/** @type {string[]|null} where tapped lines go during a capture */
let sink = null;

/** @type {Map<number, number>} level → how many calls inside `atLogLevel` asked for it */
const floors = new Map();

/**
 * Whether a console call is one of ORT's lines below what the calls into ORT now
 * running asked for.
 * @param {any[]} args
 */
function belowFloor(args) {
  if (args.length !== 1 || typeof args[0] !== 'string') return false;
  const severity = ortSeverity(args[0]);
  return severity !== null && severity < Math.min(...floors.keys());
}

/** Wrap the console methods once per page so captures can divert them. */
export function installConsoleTap() {
  const anyConsole = /** @type {any} */ (console);
  if (anyConsole.__ortwebTap) return;
  for (const m of METHODS) {
    const original = console[m].bind(console);
    console[m] = (...args) => {
      if (sink) sink.push(args.map(String).join(' '));
      else if (!floors.size || !belowFloor(args)) original(...args);
    };
  }
  anyConsole.__ortwebTap = true;
}

/**
 * Run `fn`, a call into ORT, printing only ORT's lines at `level` or above, unless
 * another call running meanwhile asked for more.
 * @template T
 * @param {number} level ORT's severity level (0 verbose ... 4 fatal)
 * @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
export async function atLogLevel(level, fn) {
  floors.set(level, (floors.get(level) ?? 0) + 1);
  try {
    return await fn();
  } finally {
    const left = /** @type {number} */ (floors.get(level)) - 1;
    if (left) floors.set(level, left);
    else floors.delete(level);
  }
}

/**
 * Run `fn` while collecting console lines (they are not printed).
 * @template T
 * @param {() => Promise<T>} fn
 * @returns {Promise<{value: T, lines: string[]}>}
 */
export async function captureConsole(fn) {
  installConsoleTap();
  /** @type {string[]} */
  const lines = [];
  sink = lines;
  try {
    return { value: await fn(), lines };
  } finally {
    sink = null;
  }
}

const HEADER = /Node\(s\) placed on \[(\w+)\]\. Number of nodes: (\d+)/;
const ALL = /All nodes placed on \[(\w+)\]\. Number of nodes: (\d+)/;
const NODE = /VerifyEachNodeIsAssignedToAnEp\]\s{3}(\S.*)$/;
const NO_KERNEL = /kernel not found in registries for Op type: (\S+) node name: ?(.*)$/;

/**
 * @typedef {object} Placement
 * @property {Object<string, string[]>} nodes EP name → 'OpType (node name)' entries
 * @property {Object<string, number>} counts  EP name → number of nodes ORT placed there
 */

/**
 * Parse ORT's placement log. With nodes on several EPs, ORT lists each node;
 * with all nodes on one EP it only gives the count, so the nodes the GPU EP
 * refused are taken from its "kernel not found" lines. ORT's own copy nodes
 * (MemcpyFromHost/ToHost) are left out: they are not the model's.
 * @param {string[]} lines
 * @returns {Placement}
 */
export function parsePlacement(lines) {
  /** @type {Object<string, string[]>} */
  const nodes = {};
  /** @type {Object<string, number>} */
  const counts = {};
  /** @type {string[]} */
  const refused = [];
  let current = null;
  for (const line of lines) {
    const none = NO_KERNEL.exec(line);
    if (none) {
      const entry = `${none[1]} (${none[2].trim()})`;
      if (!refused.includes(entry)) refused.push(entry);
      continue;
    }
    const all = ALL.exec(line);
    if (all) {
      counts[all[1]] = Number(all[2]);
      nodes[all[1]] = all[1] === 'CPUExecutionProvider' ? refused.slice() : [];
      current = null;
      continue;
    }
    const header = HEADER.exec(line);
    if (header) {
      current = header[1];
      counts[current] = Number(header[2]);
      nodes[current] = nodes[current] ?? [];
      continue;
    }
    const node = NODE.exec(line);
    if (node && current) {
      const text = node[1].trim();
      if (/^Memcpy(FromHost|ToHost) /.test(text)) counts[current] -= 1;
      else nodes[current].push(text);
    }
  }
  return { nodes, counts };
}
