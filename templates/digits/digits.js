// @ts-check
/**
 * The digits demo page: a canvas to draw on, the execution-provider switch and
 * the bar chart. The numbers come from Python (digits_app.py) through
 * `window.ortweb.call`; this file only draws.
 *
 * `window.digits` exposes the last result shown and the time to first result
 * (ms since navigation start) for headless checks.
 */

/** @type {any} */
const ortweb = /** @type {any} */ (window).ortweb;

const pad = /** @type {HTMLCanvasElement} */ (document.getElementById('pad'));
const ctx = /** @type {CanvasRenderingContext2D} */ (pad.getContext('2d', { willReadFrequently: true }));
const preview = /** @type {HTMLCanvasElement} */ (document.getElementById('model-input'));
const previewCtx = /** @type {CanvasRenderingContext2D} */ (preview.getContext('2d'));
const prediction = /** @type {HTMLOutputElement} */ (document.getElementById('prediction'));
const truth = /** @type {HTMLElement} */ (document.getElementById('truth'));
const chart = /** @type {HTMLElement} */ (document.getElementById('chart'));
const epInfo = /** @type {HTMLElement} */ (document.getElementById('ep-info'));
const epNote = /** @type {HTMLElement} */ (document.getElementById('ep-note'));
const epSet = /** @type {HTMLFieldSetElement} */ (document.getElementById('ep'));
const sampleButton = /** @type {HTMLButtonElement} */ (document.getElementById('sample'));

const state = {
  /** @type {any} */ last: null,
  firstResultMs: 0,
  /** what the last prediction was made from: a drawing, or a held-out sample's index */
  /** @type {{kind: 'drawing'} | {kind: 'sample', index: number} | null} */ input: null,
  nextSample: 0,
};
/** @type {any} */ (window).digits = state;

// -- drawing ---------------------------------------------------------------------

function clearPad() {
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, pad.width, pad.height);
}
clearPad();
ctx.lineWidth = 22;
ctx.lineCap = 'round';
ctx.lineJoin = 'round';
ctx.strokeStyle = '#000';

/** @param {PointerEvent} event */
function point(event) {
  const rect = pad.getBoundingClientRect();
  return [(event.clientX - rect.left) * (pad.width / rect.width), (event.clientY - rect.top) * (pad.height / rect.height)];
}

let drawing = false;
pad.addEventListener('pointerdown', (event) => {
  drawing = true;
  pad.setPointerCapture(event.pointerId);
  const [x, y] = point(event);
  ctx.beginPath();
  ctx.moveTo(x, y);
  ctx.lineTo(x, y);
  ctx.stroke();
});
pad.addEventListener('pointermove', (event) => {
  if (!drawing) return;
  const [x, y] = point(event);
  ctx.lineTo(x, y);
  ctx.stroke();
});
/** @param {PointerEvent} event */
function penUp(event) {
  if (!drawing) return;
  drawing = false;
  pad.releasePointerCapture(event.pointerId);
  state.input = { kind: 'drawing' };
  schedule();
}
pad.addEventListener('pointerup', penUp);
pad.addEventListener('pointercancel', penUp);

/** Draw a data-set digit (64 values, 0..16) on the pad, as gray blocks. */
function drawSample(/** @type {number[]} */ pixels) {
  clearPad();
  const cell = pad.width / 8;
  pixels.forEach((v, i) => {
    const level = Math.round(255 * (1 - v / 16));
    ctx.fillStyle = `rgb(${level},${level},${level})`;
    ctx.fillRect((i % 8) * cell, Math.floor(i / 8) * cell, cell, cell);
  });
}

// -- results -------------------------------------------------------------------------

/** @returns {string} */
function provider() {
  const checked = /** @type {HTMLInputElement|null} */ (document.querySelector('input[name="ep"]:checked'));
  return checked ? checked.value : '';
}

function showFeatures(/** @type {number[]} */ features) {
  const image = previewCtx.createImageData(8, 8);
  features.forEach((v, i) => {
    const level = Math.round(255 * (1 - v / 16));
    image.data.set([level, level, level, 255], i * 4);
  });
  const tmp = document.createElement('canvas');
  tmp.width = 8;
  tmp.height = 8;
  /** @type {CanvasRenderingContext2D} */ (tmp.getContext('2d')).putImageData(image, 0, 0);
  previewCtx.imageSmoothingEnabled = false;
  previewCtx.clearRect(0, 0, preview.width, preview.height);
  previewCtx.drawImage(tmp, 0, 0, preview.width, preview.height);
}

/** @param {any} result {label, probabilities, provider, ms, features, source, truth?} */
function show(result) {
  state.last = result;
  prediction.dataset.seq = String(Number(prediction.dataset.seq ?? 0) + 1);
  showFeatures(result.features);
  if (result.empty) {
    prediction.textContent = '…';
    delete prediction.dataset.label;
    truth.textContent = '';
    chart.replaceChildren();
    epInfo.textContent = 'draw a digit';
    return;
  }
  prediction.textContent = String(result.label);
  prediction.dataset.label = String(result.label);
  truth.textContent = result.truth === undefined ? '' : `(held-out sample #${result.index}, true label ${result.truth})`;
  const bars = result.probabilities.map((/** @type {number} */ p, /** @type {number} */ digit) => {
    const bar = document.createElement('div');
    bar.className = digit === result.label ? 'bar top' : 'bar';
    bar.dataset.p = String(p);
    const pct = document.createElement('span');
    pct.className = 'pct';
    pct.textContent = p >= 0.995 ? '100%' : `${(p * 100).toFixed(p < 0.1 ? 1 : 0)}%`;
    const fill = document.createElement('div');
    fill.className = 'fill';
    fill.style.height = `${Math.max(p * 100, 0.5)}%`;
    const label = document.createElement('span');
    label.className = 'digit';
    label.textContent = String(digit);
    bar.append(pct, fill, label);
    return bar;
  });
  chart.replaceChildren(...bars);
  epInfo.textContent = `EP: ${result.provider} · ${result.ms.toFixed(2)} ms per inference`;
  epInfo.dataset.provider = result.provider;
  epInfo.dataset.ms = String(result.ms);
}

async function predictDrawing() {
  const image = ctx.getImageData(0, 0, pad.width, pad.height);
  const result = await ortweb.call('predict_canvas', image.data, pad.width, pad.height, provider());
  show({ ...result, source: 'drawing' });
}

/** @param {number} index */
async function predictSample(index) {
  const s = await ortweb.call('sample', index);
  drawSample(s.pixels);
  const r = await ortweb.call('predict_features', [s.pixels], provider());
  show({
    label: r.labels[0], probabilities: r.probabilities[0], provider: r.provider, ms: r.ms,
    features: s.pixels, truth: s.label, index: s.index, source: 'sample',
  });
}

// One prediction at a time; a request made meanwhile runs once, with the latest input.
let running = false;
let again = false;
async function schedule() {
  if (running) {
    again = true;
    return;
  }
  running = true;
  try {
    do {
      again = false;
      const input = state.input;
      if (!input) break;
      if (input.kind === 'drawing') await predictDrawing();
      else await predictSample(input.index);
    } while (again);
  } catch (err) {
    // boot.js shows Python's traceback; say here that this result is stale.
    epInfo.textContent = `failed: ${/** @type {any} */ (err).message ?? err}`;
  } finally {
    running = false;
  }
}

document.getElementById('clear')?.addEventListener('click', () => {
  clearPad();
  state.input = { kind: 'drawing' };
  schedule();
});
sampleButton.addEventListener('click', () => {
  state.input = { kind: 'sample', index: state.nextSample++ };
  schedule();
});
epSet.addEventListener('change', () => schedule());

// -- start ---------------------------------------------------------------------------

async function start() {
  await ortweb.ready;
  const status = await ortweb.call('status');
  for (const input of /** @type {NodeListOf<HTMLInputElement>} */ (document.querySelectorAll('input[name="ep"]'))) {
    const reason = status.skipped[input.value];
    input.disabled = !status.available.includes(input.value);
    input.checked = input.value === status.default;
    if (input.disabled) input.parentElement?.setAttribute('title', reason ?? 'not available in this browser');
  }
  const skipped = Object.entries(status.skipped).map(([p, r]) => `${p} unavailable: ${r}`);
  epNote.textContent = skipped.join('; ');
  epSet.disabled = false;
  sampleButton.disabled = false;
  // The first result: a held-out digit, so the page shows what it does at once.
  state.input = { kind: 'sample', index: state.nextSample++ };
  await schedule();
  state.firstResultMs = ortweb.mark('first-result');
  ortweb.print(`first result ${(state.firstResultMs / 1000).toFixed(2)} s after the page started loading`);
}
start().catch((err) => { epInfo.textContent = `failed: ${err.message ?? err}`; });
