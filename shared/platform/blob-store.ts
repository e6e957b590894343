import { createHash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname, resolve, sep } from 'node:path';
import { type Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';

/**
 * The local blob store (docs/design.md §4 `BLOB_DIR`): files under one directory, addressed by keys such as
 * `audit-exports/<workspace>/<export>/<name>`. Writes stream into a temp file beside the final one
 * and are renamed into place, so a reader never sees a half-written blob and a crash leaves only a
 * `.tmp` file behind.
 */
const segmentPattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** Absolute path of a key; a key with empty, dot-dot or odd segments is refused (no escaping the root). */
export function blobPath(root: string, key: string): string {
  const segments = key.split('/');
  if (segments.some((segment) => !segmentPattern.test(segment) || segment.includes('..'))) {
    throw new Error(`invalid blob key ${JSON.stringify(key)}`);
  }
  const base = resolve(root);
  const path = resolve(base, ...segments);
  if (!path.startsWith(base + sep)) throw new Error(`blob key ${JSON.stringify(key)} escapes the store`);
  return path;
}

export type WrittenBlob = { bytes: number; sha256: string };

/** Counts and hashes the bytes on their way to disk, so the digest is of exactly what was stored. */
function digestingCounter(result: WrittenBlob): Transform {
  const hash = createHash('sha256');
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      hash.update(chunk);
      result.bytes += chunk.length;
      callback(null, chunk);
    },
    flush(callback) {
      result.sha256 = hash.digest('hex');
      callback();
    },
  });
}

/**
 * Streams `source` through `transforms` (e.g. gzip) to `key`: into `<key>.tmp`, fsynced, then
 * `beforeCommit` (a last chance to refuse, e.g. a lost lease) and an atomic rename. `bytes` and
 * `sha256` are of the stored bytes. Memory stays constant: the pipeline's back-pressure paces the
 * producer. On any failure the temp file is removed.
 */
export async function writeBlob(
  root: string,
  key: string,
  source: Readable,
  options: { transforms?: Transform[]; signal?: AbortSignal; beforeCommit?: () => Promise<void> } = {},
): Promise<WrittenBlob> {
  const path = blobPath(root, key);
  const temp = `${path}.tmp`;
  await mkdir(dirname(path), { recursive: true });
  const result: WrittenBlob = { bytes: 0, sha256: '' };
  try {
    await pipeline([source, ...(options.transforms ?? []), digestingCounter(result), createWriteStream(temp)], { signal: options.signal });
    const handle = await open(temp, 'r');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await options.beforeCommit?.();
    await rename(temp, path);
    return result;
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
}

/**
 * Writes `bytes` to `key`: into a temp file named by `tempTag` (each writer its own, so two writers of
 * one key never mix bytes), fsynced, `beforeCommit` (a last chance to refuse, e.g. a lost lease), then
 * an atomic rename. On any failure the temp file is removed.
 */
export async function writeBlobBytes(
  root: string,
  key: string,
  bytes: Uint8Array,
  options: { tempTag: string; beforeCommit?: () => Promise<void> },
): Promise<WrittenBlob> {
  const path = blobPath(root, key);
  const temp = `${path}.${options.tempTag}.tmp`;
  await mkdir(dirname(path), { recursive: true });
  try {
    const handle = await open(temp, 'w');
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await options.beforeCommit?.();
    await rename(temp, path);
  } catch (error) {
    await rm(temp, { force: true });
    throw error;
  }
  return { bytes: bytes.length, sha256: createHash('sha256').update(bytes).digest('hex') };
}

/** Removes a blob, or a whole prefix (a directory of blobs); missing is fine. */
export async function removeBlobs(root: string, keyOrPrefix: string): Promise<void> {
  await rm(blobPath(root, keyOrPrefix), { recursive: true, force: true });
}

/** Size of a stored blob, or null when it is not there. */
export async function blobSize(root: string, key: string): Promise<number | null> {
  try {
    const info = await stat(blobPath(root, key));
    return info.isFile() ? info.size : null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
