import { createHash } from 'node:crypto';
import { closeSync, existsSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CS2_ITEMS } from '@ianlucas/cs2-lib';
import sharp from 'sharp';
import { parseGlb } from './glb.ts';
import { itemFilePath, itemFilePaths } from './item-files.ts';
import { type ItemFilesSource, itemFileSourceKey, readItemFilesSource, writeItemFilesSource } from './item-files-source.ts';

/**
 * docs/design.md §18 `npm run item-files:fetch`: @ianlucas/cs2-lib's models (GLB) and paint textures for every
 * weapon, knife and glove definition, downloaded from ITEM_ASSETS_URL into ITEM_FILES_DIR in the
 * layout of docs/design.md §10 (models/<definition_index>.glb, paints/<paint_index>.png), and recorded in
 * ITEM_FILES_DIR/.source.json (item-files-source.ts). Never run by `npm start` or the tests' setup.
 *
 * Each file appears whole or not at all: the body is read into memory (capped), checked (a GLB that
 * parses, an image sharp decodes), written to `<file>.fetch-<pid>.part` and renamed over the target,
 * then recorded. A re-run skips what the manifest records and is still on disk unchanged, so an
 * interrupted run continues where it stopped; `.part` files of a dead run are removed at start.
 */

export type FetchKind = 'model' | 'paint';

export type FetchItemFilesOptions = {
  /** ITEM_FILES_DIR. */
  dir: string;
  /** ITEM_ASSETS_URL: cs2-lib's paths are appended to it (not the library's own baseUrl). */
  assetsUrl: string;
  /** Only these definitions and the paints of their skins (tests and partial runs); all by default. */
  definitions?: readonly number[];
  /** Models, paints or both (default). */
  kinds?: readonly FetchKind[];
  /** Bytes received over the network in the whole run; the run stops cleanly before passing it. */
  maxBytes?: number;
  /** The largest body of one file; a larger one fails that file. */
  maxFileBytes?: number;
  /** Downloads in flight at once. */
  concurrency?: number;
  /** How long one attempt at one file may take, from request to last byte. */
  timeoutMs?: number;
  /** Further attempts after a network error, a timeout, 429 or 5xx (not after 4xx or a bad body). */
  retries?: number;
  /** Keep files already at a target path that this command did not write (hand-placed game files). */
  keepExisting?: boolean;
  /** Aborting stops the run: nothing new starts, downloads in flight are dropped, the summary is returned. */
  signal?: AbortSignal;
  /** Called when a file finishes and, while bytes arrive, at most every 100 ms. */
  onProgress?: (progress: FetchProgress) => void;
};

export const FETCH_DEFAULTS = {
  maxBytes: 4 * 1024 ** 3,
  maxFileBytes: 64 * 1024 ** 2,
  concurrency: 4,
  timeoutMs: 60_000,
  retries: 2,
} as const;

export type FetchTask = { kind: FetchKind; id: number; upstream: string; file: string; key: string };
export type FetchPlan = {
  tasks: FetchTask[];
  /** Weapon, knife and glove definitions cs2-lib has no model for (knives and gloves in 7.x), and paints without a texture. */
  unavailable: { models: number[]; paints: number };
};

export type KindTally = { fetched: number; skipped: number; failed: number };
export type FetchProgress = {
  total: number;
  done: number;
  fetched: number;
  skipped: number;
  failed: number;
  bytesReceived: number;
  maxBytes: number;
  ms: number;
};
export type FetchFailure = { file: string; url: string; reason: string };
export type FetchSummary = FetchProgress & {
  byKind: Record<FetchKind, KindTally>;
  /** Files neither fetched, skipped nor failed because the run stopped first. */
  notAttempted: number;
  bytesWritten: number;
  /** Why the run ended early: the byte cap, or the caller's signal (Ctrl-C). */
  stopped: 'max-bytes' | 'interrupted' | null;
  unavailable: FetchPlan['unavailable'];
  failures: FetchFailure[];
};

const HANDLED_TYPES = new Set(['weapon', 'melee', 'glove']);

/**
 * What a fetch downloads: per weapon, knife and glove definition the model cs2-lib's
 * `getModelBinary()` names (the parent's `modelBinary` for a skin, the item's own for a base), and
 * per paint kit of those definitions' skins its `textureImage` (one texture per paint index: the
 * library gives every skin of a paint the same one).
 */
export function itemFilesFetchPlan(dir: string, options: { definitions?: readonly number[]; kinds?: readonly FetchKind[] } = {}): FetchPlan {
  const kinds = new Set(options.kinds ?? ['model', 'paint']);
  const only = options.definitions ? new Set(options.definitions) : null;
  const byId = new Map(CS2_ITEMS.map((item) => [item.id, item]));
  const models = new Map<number, string | undefined>();
  const paints = new Map<number, string | undefined>();
  for (const item of CS2_ITEMS) {
    if (item.def === undefined || !HANDLED_TYPES.has(item.type)) continue;
    if (only && !only.has(item.def)) continue;
    const parent = item.baseId === undefined ? undefined : byId.get(item.baseId);
    const binary = (parent ?? item).modelBinary;
    if (!models.get(item.def)) models.set(item.def, binary);
    if (item.index !== undefined && item.index > 0 && !paints.get(item.index)) paints.set(item.index, item.textureImage);
  }
  const tasks: FetchTask[] = [];
  const unavailable = { models: [] as number[], paints: 0 };
  const add = (kind: FetchKind, entries: Map<number, string | undefined>) => {
    for (const [id, upstream] of [...entries].sort((a, b) => a[0] - b[0])) {
      if (!upstream) {
        if (kind === 'model') unavailable.models.push(id);
        else unavailable.paints++;
        continue;
      }
      tasks.push({ kind, id, upstream, file: itemFilePath(dir, kind, id)!, key: itemFileSourceKey(dir, kind, id)! });
    }
  };
  if (kinds.has('model')) add('model', models);
  if (kinds.has('paint')) add('paint', paints);
  return { tasks, unavailable };
}

class StopRun extends Error {}
/** A failure worth another attempt (network, timeout, 429, 5xx). */
class Transient extends Error {}

/** Downloads the plan's files; failures are counted and reported, never thrown. */
export async function fetchItemFiles(options: FetchItemFilesOptions): Promise<FetchSummary> {
  const started = performance.now();
  const maxBytes = options.maxBytes ?? FETCH_DEFAULTS.maxBytes;
  const maxFileBytes = options.maxFileBytes ?? FETCH_DEFAULTS.maxFileBytes;
  const concurrency = Math.max(1, options.concurrency ?? FETCH_DEFAULTS.concurrency);
  const timeoutMs = options.timeoutMs ?? FETCH_DEFAULTS.timeoutMs;
  const retries = Math.max(0, options.retries ?? FETCH_DEFAULTS.retries);
  const assetsUrl = options.assetsUrl.replace(/\/+$/, '');
  const paths = itemFilePaths(options.dir);
  mkdirSync(paths.models, { recursive: true });
  mkdirSync(paths.paints, { recursive: true });

  const releaseLock = takeLock(paths.root);
  try {
    removeDeadParts([paths.models, paths.paints]);
    const plan = itemFilesFetchPlan(options.dir, options);
    const source = readItemFilesSource(options.dir);
    const manifest: ItemFilesSource = { schema: 1, files: { ...source.files } };
    const summary: FetchSummary = {
      total: plan.tasks.length,
      done: 0,
      fetched: 0,
      skipped: 0,
      failed: 0,
      bytesReceived: 0,
      maxBytes,
      ms: 0,
      byKind: { model: { fetched: 0, skipped: 0, failed: 0 }, paint: { fetched: 0, skipped: 0, failed: 0 } },
      notAttempted: 0,
      bytesWritten: 0,
      stopped: null,
      unavailable: plan.unavailable,
      failures: [],
    };

    // One controller for the run: the caller's signal and the byte cap both stop everything in flight.
    const run = new AbortController();
    const onCallerAbort = () => stop('interrupted');
    options.signal?.addEventListener('abort', onCallerAbort, { once: true });
    if (options.signal?.aborted) stop('interrupted');
    function stop(reason: 'max-bytes' | 'interrupted'): void {
      summary.stopped ??= reason;
      run.abort(new StopRun(reason));
    }

    let lastProgress = 0;
    const progress = (force: boolean) => {
      const now = performance.now();
      if (!options.onProgress || (!force && now - lastProgress < 100)) return;
      lastProgress = now;
      summary.ms = Math.round(now - started);
      options.onProgress(progressOf(summary));
    };

    // The manifest is rewritten at most once a second and at the end: a file renamed into place but
    // not yet recorded (a kill in that second) is fetched again by the next run, never trusted unseen.
    let manifestDirty = false;
    let lastManifestWrite = 0;
    const saveManifest = (force: boolean) => {
      if (!manifestDirty || (!force && performance.now() - lastManifestWrite < 1_000)) return;
      writeItemFilesSource(options.dir, manifest);
      manifestDirty = false;
      lastManifestWrite = performance.now();
    };

    const finish = (task: FetchTask, outcome: 'fetched' | 'skipped' | 'failed') => {
      summary[outcome]++;
      summary.byKind[task.kind][outcome]++;
      summary.done++;
      progress(true);
    };

    const fetchOne = async (task: FetchTask): Promise<void> => {
      const url = `${assetsUrl}${task.upstream}`;
      for (let attempt = 0; ; attempt++) {
        try {
          const body = await download(url, task, attempt);
          const bytes = task.kind === 'model' ? checkedModel(body) : await pngOfTexture(body);
          writeWhole(task.file, bytes);
          manifest.files[task.key] = {
            source: 'cs2-lib',
            upstream: task.upstream,
            url,
            bytes: bytes.byteLength,
            upstream_bytes: body.byteLength,
            sha256: createHash('sha256').update(bytes).digest('hex'),
            fetched_at: new Date().toISOString(),
          };
          manifestDirty = true;
          summary.bytesWritten += bytes.byteLength;
          saveManifest(false);
          return finish(task, 'fetched');
        } catch (error) {
          if (run.signal.aborted) throw run.signal.reason;
          if (error instanceof Transient && attempt < retries) {
            await sleep(250 * 2 ** attempt, run.signal);
            continue;
          }
          summary.failures.push({ file: task.key, url, reason: (error as Error).message });
          return finish(task, 'failed');
        }
      }
    };

    /** The body of one attempt, counting every byte against the run's cap and the file's. */
    const download = async (url: string, task: FetchTask, attempt: number): Promise<Uint8Array> => {
      const timeout = AbortSignal.timeout(timeoutMs);
      const signal = AbortSignal.any([run.signal, timeout]);
      try {
        let response: Response;
        try {
          response = await fetch(url, { signal, headers: { accept: task.kind === 'model' ? 'model/gltf-binary' : 'image/webp,image/*' } });
        } catch (error) {
          throw new Transient(`request failed: ${(error as Error).message}`);
        }
        if (!response.ok) {
          await response.body?.cancel().catch(() => undefined); // the status is the answer; the body is not read
          const message = `HTTP ${response.status}${attempt > 0 ? ` after ${attempt + 1} attempts` : ''}`;
          if (response.status === 429 || response.status >= 500) throw new Transient(message);
          throw new Error(message);
        }
        // Bun's fetch decodes gzip/br bodies: a Content-Length then counts encoded bytes, not ours.
        const encoded = (response.headers.get('content-encoding') ?? 'identity') !== 'identity';
        const declared = encoded ? NaN : Number(response.headers.get('content-length') ?? NaN);
        if (declared > maxFileBytes) {
          await response.body?.cancel().catch(() => undefined);
          throw new Error(`larger than the per-file cap (${declared} > ${maxFileBytes} bytes)`);
        }
        // A declared length that would cross the run's cap stops the run before a byte is read.
        if (declared > 0 && summary.bytesReceived + declared > maxBytes) {
          await response.body?.cancel().catch(() => undefined);
          stop('max-bytes');
          throw run.signal.reason;
        }
        const chunks: Uint8Array[] = [];
        let length = 0;
        const reader = response.body!.getReader();
        try {
          for (;;) {
            let chunk: Awaited<ReturnType<typeof reader.read>>;
            try {
              chunk = await reader.read();
            } catch (error) {
              throw new Transient(`body interrupted: ${(error as Error).message}`);
            }
            if (chunk.done) break;
            if (length + chunk.value.byteLength > maxFileBytes) throw new Error(`larger than the per-file cap (> ${maxFileBytes} bytes)`);
            if (summary.bytesReceived + chunk.value.byteLength > maxBytes) {
              stop('max-bytes');
              throw run.signal.reason;
            }
            summary.bytesReceived += chunk.value.byteLength;
            length += chunk.value.byteLength;
            chunks.push(chunk.value);
            progress(false);
          }
        } finally {
          reader.cancel().catch(() => undefined);
        }
        if (Number.isFinite(declared) && declared !== length) throw new Transient(`body ended at ${length} of ${declared} bytes`);
        return Buffer.concat(chunks, length);
      } catch (error) {
        if (run.signal.aborted) throw run.signal.reason;
        if (timeout.aborted) throw new Transient(`timed out after ${timeoutMs} ms`);
        throw error;
      }
    };

    const pending: FetchTask[] = [];
    for (const task of plan.tasks) {
      if (isComplete(task, manifest, options.keepExisting === true)) finish(task, 'skipped');
      else pending.push(task);
    }

    let next = 0;
    const runners = Array.from({ length: Math.min(concurrency, pending.length) }, async () => {
      while (next < pending.length && !run.signal.aborted) {
        const task = pending[next++]!;
        try {
          await fetchOne(task);
        } catch (error) {
          if (!(error instanceof StopRun)) throw error; // a bug, not a download failure
          return; // the stopped file is counted as not attempted
        }
      }
    });
    try {
      await Promise.all(runners);
    } finally {
      options.signal?.removeEventListener('abort', onCallerAbort);
      saveManifest(true);
    }
    summary.notAttempted = summary.total - summary.done;
    summary.ms = Math.round(performance.now() - started);
    return summary;
  } finally {
    releaseLock();
  }
}

function progressOf(summary: FetchSummary): FetchProgress {
  const { total, done, fetched, skipped, failed, bytesReceived, maxBytes, ms } = summary;
  return { total, done, fetched, skipped, failed, bytesReceived, maxBytes, ms };
}

/**
 * A file is complete when the manifest records it from the same upstream path and the file on disk
 * has the recorded size. Any other file at the path (a stand-in, an older fetch of another path) is
 * replaced, unless keepExisting keeps files this command did not write.
 */
function isComplete(task: FetchTask, manifest: ItemFilesSource, keepExisting: boolean): boolean {
  let size: number;
  try {
    size = statSync(task.file).size;
  } catch {
    return false;
  }
  const entry = manifest.files[task.key];
  if (entry) return entry.upstream === task.upstream && entry.bytes === size;
  return keepExisting;
}

/** A model is kept only if it parses as glTF 2.0 binary (the viewer's loader would refuse anything else). */
function checkedModel(bytes: Uint8Array): Uint8Array {
  try {
    const { json } = parseGlb(bytes);
    if ((json as { asset?: { version?: unknown } } | null)?.asset?.version !== '2.0') throw new Error('asset.version is not 2.0');
  } catch (error) {
    throw new Error(`not a GLB model: ${(error as Error).message}`);
  }
  return bytes;
}

/**
 * docs/design.md §10 names paints `.png` and the viewer serves them as image/png, while cs2-lib's textures are
 * WebP: converted losslessly (PNG keeps every decoded pixel), larger on disk than the download.
 */
async function pngOfTexture(bytes: Uint8Array): Promise<Uint8Array> {
  try {
    const image = sharp(bytes, { failOn: 'error' });
    const { width, height } = await image.metadata();
    if (!width || !height) throw new Error('no dimensions');
    return await image.png({ compressionLevel: 6 }).toBuffer();
  } catch (error) {
    throw new Error(`not an image: ${(error as Error).message}`);
  }
}

const PART_PATTERN = /\.fetch-(\d+)\.part$/;

/** Written beside the target and renamed over it: the target is either the old file or the whole new one. */
function writeWhole(file: string, bytes: Uint8Array): void {
  const temporary = `${file}.fetch-${process.pid}.part`;
  try {
    writeFileSync(temporary, bytes);
    renameSync(temporary, file);
  } catch (error) {
    rmSync(temporary, { force: true });
    throw error;
  }
}

/** Temporary files of runs that died between writing and renaming (never a complete file's name). */
function removeDeadParts(folders: string[]): void {
  for (const folder of folders) {
    for (const name of readdirSync(folder)) {
      const match = PART_PATTERN.exec(name);
      if (match && !isAlive(Number(match[1]))) rmSync(path.join(folder, name), { force: true });
    }
  }
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return false; // a part of ours from an earlier run in this process is stale too
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * One fetch per directory at a time (two would race on the manifest): ITEM_FILES_DIR/.fetch.lock
 * holds the runner's pid; a lock whose process is gone is taken over.
 */
function takeLock(root: string): () => void {
  const lock = path.join(root, '.fetch.lock');
  for (let tries = 0; tries < 2; tries++) {
    try {
      const fd = openSync(lock, 'wx');
      writeFileSync(fd, String(process.pid));
      closeSync(fd);
      return () => rmSync(lock, { force: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readLockPid(lock));
      if (Number.isInteger(holder) && holder > 0 && holder !== process.pid && isAlive(holder)) {
        throw new Error(`another item-files fetch (pid ${holder}) is writing ${root}; remove ${lock} if it is not running`);
      }
      if (existsSync(lock)) unlinkSync(lock);
    }
  }
  throw new Error(`could not take ${lock}`);
}

function readLockPid(lock: string): string {
  try {
    return readFileSync(lock, 'utf8').trim();
  } catch {
    return '';
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
/** 1536 → "1.5 KiB". */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(1)} ${UNITS[unit]}`;
}

/**
 * One line of progress: plain words, or for a terminal `columns` wide a bar and short counts that
 * fit on one line (a wrapped line could not be redrawn in place).
 */
export function formatProgress(progress: FetchProgress, columns = 0): string {
  const seconds = progress.ms / 1000;
  const rate = seconds > 0 ? ` ${formatBytes(progress.bytesReceived / seconds)}/s` : '';
  if (columns <= 0) {
    return `item files: ${progress.done}/${progress.total} files (${progress.fetched} fetched, ${progress.skipped} skipped, ${progress.failed} failed) ${formatBytes(progress.bytesReceived)}${rate}`;
  }
  const share = progress.total === 0 ? 1 : progress.done / progress.total;
  const counts = ` ${(share * 100).toFixed(0).padStart(3)}% ${progress.done}/${progress.total} files, ${progress.failed} failed, ${formatBytes(progress.bytesReceived)}${rate}`;
  const barWidth = Math.max(10, Math.min(40, columns - 1 - counts.length - 2));
  const filled = Math.round(share * barWidth);
  return `[${'#'.repeat(filled)}${'-'.repeat(barWidth - filled)}]${counts}`.slice(0, columns - 1);
}

/** The end-of-run report, several lines. */
export function formatSummary(summary: FetchSummary): string {
  const kinds = (['model', 'paint'] as const)
    .map((kind) => `${kind}s ${summary.byKind[kind].fetched} fetched, ${summary.byKind[kind].skipped} skipped, ${summary.byKind[kind].failed} failed`)
    .join('; ');
  const lines = [
    `item files: ${summary.fetched} fetched, ${summary.skipped} skipped, ${summary.failed} failed${summary.notAttempted > 0 ? `, ${summary.notAttempted} not attempted` : ''} of ${summary.total} (${kinds})`,
    `  ${formatBytes(summary.bytesReceived)} received (cap ${formatBytes(summary.maxBytes)}), ${formatBytes(summary.bytesWritten)} written, ${(summary.ms / 1000).toFixed(1)} s`,
  ];
  if (summary.stopped === 'max-bytes') lines.push(`  stopped at the byte cap (--max-bytes): run again with a larger cap to continue`);
  if (summary.stopped === 'interrupted') lines.push(`  interrupted: run again to continue`);
  if (summary.unavailable.models.length > 0 || summary.unavailable.paints > 0) {
    lines.push(
      `  not in cs2-lib: models of definitions ${summary.unavailable.models.join(',') || 'none'}; ${summary.unavailable.paints} paint textures (stand-ins or cards stay)`,
    );
  }
  for (const failure of summary.failures.slice(0, 20)) lines.push(`  failed ${failure.file}: ${failure.reason} (${failure.url})`);
  if (summary.failures.length > 20) lines.push(`  … and ${summary.failures.length - 20} more failures`);
  return lines.join('\n');
}
