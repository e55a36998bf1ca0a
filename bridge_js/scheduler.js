// @ts-check
/**
 * A faster way for Pyodide's asyncio event loop to run "call soon" callbacks on a
 * page's main thread.
 *
 * Pyodide 0.27's WebLoop schedules every zero-delay callback (each wake-up of an
 * asyncio task) with `window.postMessage`; in a worker it uses a `MessageChannel`.
 * Measured here (Chromium 156), an `await asyncio.sleep(0)` costs 0.25-0.29 ms the
 * first way and 0.13-0.20 ms the second. Every `await` of a bridge call pays one.
 *
 * This is Pyodide's worker path, on the main thread: a new channel per callback.
 * One shared channel with a queue was faster still (0.08-0.13 ms) but in about one
 * run in five of tests/test_iobinding.py it left the renderer's main thread spinning
 * in native code during the WebGPU error-recovery test (0 hangs in 12 runs this
 * way, nor with Pyodide's own).
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
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.onmessage = null;
      channel.port1.close();
      channel.port2.close();
      callback();
    };
    channel.port2.postMessage(null);
  };
}
