// @ts-check
/**
 * ortweb's file cache: models and external data files downloaded by URL, kept in
 * the Origin Private File System (OPFS), in the folder `ortweb-files-v1` of
 * `navigator.storage.getDirectory()`. OPFS hands a stored file back about twice as
 * fast as Cache Storage (README, *Cache*), and works in pages and workers alike.
 *
 * An entry is two files named by the sha256 (hex) of its key: `<name>.bin`, the
 * file's bytes, and `<name>.json`, its sidecar (`key`, `url`, `size`, `sha256`,
 * `stored`). Each is written with `createWritable()`, whose swap file replaces the
 * file only on `close()`, so a write that fails or stops leaves the old file or
 * none; the data is written before its sidecar, and the old sidecar goes first, so
 * a sidecar is only ever beside the bytes it describes. An entry whose sidecar is
 * missing or unreadable, or names another key or a size the file lacks, is absent,
 * and is removed.
 *
 * Pages and workers of one origin share the folder: a Web Lock per entry, shared
 * while an entry is read and exclusive while it is written or removed, so a reader
 * never sees a file another page is replacing.
 * @module file_cache
 */

/** The folder's name under OPFS's root (bump on a format change). */
export const FILE_CACHE = 'ortweb-files-v1';
const DATA = '.bin';
const SIDECAR = '.json';
/** Bytes handed to a writable at once (each write copies its piece). */
const WRITE_CHUNK = 1 << 23;

/**
 * @typedef {object} Entry
 * @property {string} key  the cache key (URL without fragment, + `ortweb-sha256`)
 * @property {string} url  the key without the hash
 * @property {number} size  bytes
 * @property {string} sha256  the hash the URL asked for, or ''
 * @property {string} stored  ISO time
 */

/** Whether this page can keep files: OPFS with `createWritable`, WebCrypto, Web Locks. */
export function cacheAvailable() {
  return typeof globalThis.navigator?.storage?.getDirectory === 'function'
    && typeof globalThis.FileSystemFileHandle?.prototype?.createWritable === 'function'
    && typeof globalThis.crypto?.subtle?.digest === 'function'
    && typeof globalThis.navigator?.locks?.request === 'function';
}

/**
 * The cache's folder, or null where the page cannot keep files (then nothing is).
 * Opened afresh each time: a user who clears the site's data takes the folder with it.
 * @returns {Promise<FileSystemDirectoryHandle|null>}
 */
export async function openStore() {
  if (!cacheAvailable()) return null;
  await dropOldCache();
  try {
    const root = await navigator.storage.getDirectory();
    return await root.getDirectoryHandle(FILE_CACHE, { create: true });
  } catch {
    return null;  // e.g. storage blocked for this origin
  }
}

/** @type {Promise<unknown>|null} */
let oldDropped = null;

/** Remove the Cache Storage cache earlier versions kept these files in (once a page). */
function dropOldCache() {
  oldDropped ??= globalThis.caches?.delete(FILE_CACHE).catch(() => false) ?? Promise.resolve(false);
  return oldDropped;
}

/** @param {string} text */
async function hexDigest(text) {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, '0')).join('');
}

/** An entry's file name (without suffix): the sha256 of its key. @param {string} key */
export const entryName = (key) => hexDigest(key);

/**
 * Run `fn` holding the entry's Web Lock (shared by every page and worker of the origin).
 * @template T
 * @param {string} name @param {LockMode} mode @param {() => Promise<T>} fn
 * @returns {Promise<T>}
 */
async function locked(name, mode, fn) {
  /** @type {T|undefined} */
  let result;
  await navigator.locks.request(`${FILE_CACHE}/${name}`, { mode }, async () => {
    result = await fn();
  });
  return /** @type {T} */ (result);
}

/**
 * A file of the folder, or null when it is not there.
 * @param {FileSystemDirectoryHandle} dir @param {string} fileName
 */
async function fileOf(dir, fileName) {
  try {
    return await (await dir.getFileHandle(fileName)).getFile();
  } catch {
    return null;
  }
}

/** @param {FileSystemDirectoryHandle} dir @param {string} fileName */
async function remove(dir, fileName) {
  try {
    await dir.removeEntry(fileName);
    return true;
  } catch {
    return false;  // not there (or removed by another page meanwhile)
  }
}

/**
 * The entry `name` as it is: its sidecar (null when missing or unreadable) and
 * data file (null when missing), and whether they make a whole entry.
 * Call with the entry's lock held.
 * @param {FileSystemDirectoryHandle} dir @param {string} name
 */
async function inspect(dir, name) {
  const [sidecarFile, data] = await Promise.all([fileOf(dir, name + SIDECAR), fileOf(dir, name + DATA)]);
  /** @type {Entry|null} */
  let entry = null;
  if (sidecarFile) {
    try {
      const parsed = JSON.parse(await sidecarFile.text());
      if (typeof parsed?.key === 'string' && Number.isSafeInteger(parsed.size)) entry = parsed;
    } catch {
      // Unreadable: as if missing.
    }
  }
  const whole = entry !== null && data !== null && data.size === entry.size
    && (await hexDigest(entry.key)) === name;
  return { entry, data, whole, any: sidecarFile !== null || data !== null };
}

/**
 * Remove entry `name` when it is still not whole (after another look under the
 * exclusive lock: another page may have written it since).
 * @param {FileSystemDirectoryHandle} dir @param {string} name
 */
async function dropIfBroken(dir, name) {
  await locked(name, 'exclusive', async () => {
    const now = await inspect(dir, name);
    if (now.whole || !now.any) return;
    await remove(dir, name + SIDECAR);
    await remove(dir, name + DATA);
  });
}

/**
 * The bytes kept under `key`, or null (not kept, or broken: then removed).
 * @param {FileSystemDirectoryHandle} dir @param {string} key
 * @param {(size: number) => void} [starting] called with the size before the read
 * @returns {Promise<Uint8Array|null>}
 */
export async function readEntry(dir, key, starting) {
  const name = await entryName(key);
  const found = await locked(name, 'shared', async () => {
    const { entry, data, whole, any } = await inspect(dir, name);
    if (!whole || !entry || !data || entry.key !== key) return { bytes: null, broken: any };
    starting?.(entry.size);
    try {
      // In one piece: OPFS hands a file over fastest whole, and it is local.
      return { bytes: new Uint8Array(await data.arrayBuffer()), broken: false };
    } catch {
      // Unreadable (the site's data cleared meanwhile, a disk error): download afresh.
      return { bytes: null, broken: true };
    }
  });
  if (found.broken) await dropIfBroken(dir, name);
  return found.bytes;
}

/**
 * Write `bytes` as the file `fileName`: in place only once whole (`close()`), or not
 * at all.
 * @param {FileSystemDirectoryHandle} dir @param {string} fileName @param {Uint8Array} bytes
 */
async function writeFile(dir, fileName, bytes) {
  const writable = await (await dir.getFileHandle(fileName, { create: true })).createWritable();
  try {
    for (let at = 0; at < bytes.length; at += WRITE_CHUNK) {
      await writable.write(/** @type {Uint8Array<ArrayBuffer>} */ (bytes.subarray(at, at + WRITE_CHUNK)));
    }
    await writable.close();
  } catch (err) {
    await writable.abort().catch(() => {});
    throw err;
  }
}

/**
 * Keep `bytes` under `key` (a whole entry already there, kept by another page
 * meanwhile, is left as it is). Throws when the write fails, leaving no entry.
 * @param {FileSystemDirectoryHandle} dir @param {string} key @param {string} url the key without the hash
 * @param {Uint8Array} bytes @param {string} sha the hash the URL asked for, or ''
 */
export async function writeEntry(dir, key, url, bytes, sha) {
  const name = await entryName(key);
  await locked(name, 'exclusive', async () => {
    const now = await inspect(dir, name);
    if (now.whole && now.entry?.key === key && now.entry.size === bytes.length) return;
    try {
      await remove(dir, name + SIDECAR);
      await writeFile(dir, name + DATA, bytes);
      /** @type {Entry} */
      const entry = { key, url, size: bytes.length, sha256: sha, stored: new Date().toISOString() };
      await writeFile(dir, name + SIDECAR, new TextEncoder().encode(JSON.stringify(entry)));
    } catch (err) {
      await remove(dir, name + SIDECAR);
      await remove(dir, name + DATA);
      throw err;
    }
  });
}

/**
 * The names of the folder's entries (whole or not), and of anything else in it.
 * @param {FileSystemDirectoryHandle} dir
 */
async function names(dir) {
  const entries = new Set();
  const other = [];
  for await (const fileName of dir.keys()) {
    const found = /^([0-9a-f]{64})\.(bin|json)$/.exec(fileName);
    if (found) entries.add(found[1]);
    else other.push(fileName);
  }
  return { entries: [...entries].sort(), other };
}

/**
 * The whole entries kept, oldest first (broken ones are removed on the way).
 * @param {FileSystemDirectoryHandle} dir
 * @returns {Promise<Entry[]>}
 */
export async function listEntries(dir) {
  const kept = [];
  for (const name of (await names(dir)).entries) {
    const { entry, whole, any } = await locked(name, 'shared', () => inspect(dir, name));
    if (whole && entry) kept.push(entry);
    else if (any) await dropIfBroken(dir, name);
  }
  return kept.sort((a, b) => String(a.stored).localeCompare(String(b.stored)) || a.url.localeCompare(b.url));
}

/**
 * Remove the entries whose `url` is `url`, or all (with anything else in the folder).
 * @param {FileSystemDirectoryHandle} dir @param {string|null} url
 * @returns {Promise<number>} how many entries went
 */
export async function removeEntries(dir, url) {
  const { entries, other } = await names(dir);
  let removed = 0;
  for (const name of entries) {
    const went = await locked(name, 'exclusive', async () => {
      if (url !== null) {
        const { entry } = await inspect(dir, name);
        if (entry?.url !== url) return false;
      }
      const sidecar = await remove(dir, name + SIDECAR);
      return (await remove(dir, name + DATA)) || sidecar;
    });
    if (went) removed += 1;
  }
  if (url === null) {
    for (const fileName of other) await remove(dir, fileName);
  }
  return removed;
}
