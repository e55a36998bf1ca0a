// @ts-check
/**
 * One page-wide queue for ORT calls. ORT-web rejects a second `run()` while one
 * is in flight on the same session ("Session already started"), and its native
 * WebGPU build breaks on concurrent `create()`: so create, run and release are
 * serialised here, and a failed call does not block the ones behind it.
 * @module queue
 */

export class SerialQueue {
  constructor() {
    /** @type {Promise<unknown>} */
    this._tail = Promise.resolve();
    this.pending = 0;
  }

  /**
   * Run `task` after every task queued before it has settled.
   * @template T
   * @param {() => Promise<T>} task
   * @returns {Promise<T>}
   */
  run(task) {
    this.pending += 1;
    const result = this._tail.then(task);
    // The tail swallows the outcome so one failure cannot poison later tasks.
    this._tail = result.then(
      () => { this.pending -= 1; },
      () => { this.pending -= 1; },
    );
    return result;
  }
}

/** The queue shared by every session of this page (or worker). */
export const pageQueue = new SerialQueue();
