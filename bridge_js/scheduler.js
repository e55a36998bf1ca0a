// @ts-check
/**
 * How Python tasks are woken: a faster way for Pyodide's asyncio event loop to run
 * "call soon" callbacks on a page's main thread (`createScheduler`), and a wake-up
 * in the microtask after a bridge call settles (`createWaker`).
 *
 * Pyodide 0.27's WebLoop schedules every zero-delay callback (each wake-up of an
 * asyncio task) with `window.postMessage`; in a worker it uses a `MessageChannel`.
 * An `await asyncio.sleep(0)` costs markedly less the second way (README, *Waiting
 * for JavaScript*). Every `await` of a bridge call pays one.
 *
 * This is Pyodide's worker path, on the main thread: a new channel per callback.
 * One shared channel with a queue was faster still, but it sometimes left the
 * renderer's main thread spinning in native code during tests/test_iobinding.py's
 * WebGPU error-recovery test, which neither this way nor Pyodide's own ever did
 * (README, *Benchmarks*).
 *
 * Same contract as Pyodide's `scheduleCallback(callback, delay)`: one callback per
 * task, delays over 2 ms go to `setTimeout`, so microtasks still run between two
 * callbacks and one callback throwing does not stop the next.
 * @module scheduler
 */

/**
 * @returns {(callback: () => void, delay?: number) => void}
 */
export function createScheduler() {
  return (callback, delay = 0) => {
    if (delay > 2) {
      setTimeout(callback, delay);
      return;
    }
    post(callback);
  };
}

/**
 * Wake a waiting Python task in the microtask after a bridge call settles, as an
 * `await` in JavaScript resumes, instead of through a turn of the event loop.
 *
 * Even through a `MessageChannel`, a turn of Pyodide's event loop costs more than a
 * tiny wasm run itself. Resuming in a microtask skips the
 * browser's task queue, but a task that awaits one call after another would then
 * never let the page run a task of its own (input, rendering, timers, other
 * asyncio callbacks). So microtask wake-ups chain for at most `budgetMs`; the first
 * one of a chain posts a marker task that ends the chain when the page gets to run
 * it, and a wake-up due after the budget waits behind that marker instead.
 *
 * `wake` gets what `settled` resolved to; it may return a promise (a PyProxy's
 * `callPromising` does), whose rejection is reported like an uncaught error, as is
 * a throw.
 * @param {number} [budgetMs]
 * @returns {(settled: Promise<any>, wake: (value: any) => any) => void}
 */
export function createWaker(budgetMs = 4) {
  /** @type {number|null} when the current chain of microtask wake-ups began */
  let chainSince = null;
  /** @param {(value: any) => any} wake @param {any} value */
  const call = (wake, value) => {
    try {
      const result = wake(value);
      if (result && typeof result.then === 'function') result.then(null, reportError);
    } catch (err) {
      reportError(err);
    }
  };
  return (settled, wake) => {
    settled.then((value) => {
      const now = performance.now();
      if (chainSince === null) {
        chainSince = now;
        post(() => { chainSince = null; });
      }
      if (now - chainSince < budgetMs) call(wake, value);
      else post(() => call(wake, value));
    }, reportError);
  };
}

/** @param {() => void} callback run in a task of its own */
function post(callback) {
  const channel = new MessageChannel();
  channel.port1.onmessage = () => {
    channel.port1.onmessage = null;
    channel.port1.close();
    channel.port2.close();
    callback();
  };
  channel.port2.postMessage(null);
}
