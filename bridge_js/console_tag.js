// @ts-check
/**
 * How a page's Python output reaches the host tools: each line is a console
 * message that starts with a tag, so the host can tell it from the page's own
 * logging. The runner page (web/runner.js) and every site page (web/site/boot.js)
 * print through here; the host reads the same tag as `ortweb.host.browser.capture.TAG`.
 * @module console_tag
 */

/** The prefix of a console message that carries a line Python printed. */
export const TAG = '\u0001ortweb:';

/**
 * Print `line` of Python's `stream` (`stdout`, `stderr`) for the host.
 * @param {string} stream
 * @param {string} line
 */
export function printTagged(stream, line) {
  console.log(`${TAG}${stream}\u0001${line}`);
}
