// `npm run item-files:fetch` (docs/design.md §18): @ianlucas/cs2-lib's GLB models and paint textures from
// ITEM_ASSETS_URL into ITEM_FILES_DIR, replacing stand-ins; see docs/operations.md "Real 3D item
// files". Needs no services, so it runs with plain bun; never run by `npm start` or the tests.
import { parseArgs } from 'node:util';
import { FETCH_DEFAULTS, type FetchKind, type FetchProgress, fetchItemFiles, formatProgress, formatSummary } from '../shared/media/fetch-item-files.ts';
import { itemFilePaths } from '../shared/media/item-files.ts';
import { loadConfigOrExit } from '../shared/platform/config.ts';

const HELP = `npm run item-files:fetch -- [options]

Downloads cs2-lib's models (models/<definition_index>.glb) and paint textures (paints/<paint_index>.png)
for every weapon, knife and glove from ITEM_ASSETS_URL into ITEM_FILES_DIR. Resumable: run it again
to continue after Ctrl-C, a failure or the byte cap.

  --max-bytes N         stop cleanly before receiving more than N bytes (default 4G; K, M, G suffixes)
  --max-file-bytes N    a larger file fails (default 64M)
  --concurrency N       downloads in flight (default ${FETCH_DEFAULTS.concurrency})
  --timeout-ms N        one attempt at one file (default ${FETCH_DEFAULTS.timeoutMs})
  --retries N           further attempts after a network error, timeout, 429 or 5xx (default ${FETCH_DEFAULTS.retries})
  --definitions 7,9     only these definitions and their skins' paints
  --kinds model,paint   only models or only paints
  --keep-existing       keep files at a target path that this command did not write (hand-placed game files)
  --json                print the summary as JSON
Exit status: 0 all files present, 1 some failed, 3 stopped at the byte cap, 130 interrupted.`;

function bytesOption(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  const match = /^(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?$/i.exec(value.trim());
  if (!match) usage(`--${name} must be a number of bytes (e.g. 500M, 4G)`);
  const power = ['', 'k', 'm', 'g', 't'].indexOf(match[2]!.toLowerCase());
  return Math.floor(Number(match[1]) * 1024 ** power);
}

function integerOption(name: string, value: string | undefined, fallback: number, min: number): number {
  if (value === undefined) return fallback;
  const parsed = Number(value);
  if (!Number.isInteger(parsed) || parsed < min) usage(`--${name} must be an integer of at least ${min}`);
  return parsed;
}

function usage(message: string): never {
  process.stderr.write(`${message}\n\n${HELP}\n`);
  process.exit(2);
}

const parsed = (() => {
  try {
    return parseArgs({
      options: {
        'max-bytes': { type: 'string' },
        'max-file-bytes': { type: 'string' },
        concurrency: { type: 'string' },
        'timeout-ms': { type: 'string' },
        retries: { type: 'string' },
        definitions: { type: 'string' },
        kinds: { type: 'string' },
        'keep-existing': { type: 'boolean' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (error) {
    return usage((error as Error).message);
  }
})();
const flags = parsed.values;
if (flags.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}
const definitions = flags.definitions?.split(',').map((id) => {
  const value = Number(id.trim());
  if (!Number.isInteger(value) || value < 0) usage('--definitions takes definition indexes, e.g. 7,9');
  return value;
});
const kinds = flags.kinds?.split(',').map((kind) => {
  const value = kind.trim().replace(/s$/, '');
  if (value !== 'model' && value !== 'paint') usage('--kinds takes model, paint or both');
  return value as FetchKind;
});

const limits = {
  maxBytes: bytesOption('max-bytes', flags['max-bytes'], FETCH_DEFAULTS.maxBytes),
  maxFileBytes: bytesOption('max-file-bytes', flags['max-file-bytes'], FETCH_DEFAULTS.maxFileBytes),
  concurrency: integerOption('concurrency', flags.concurrency, FETCH_DEFAULTS.concurrency, 1),
  timeoutMs: integerOption('timeout-ms', flags['timeout-ms'], FETCH_DEFAULTS.timeoutMs, 100),
  retries: integerOption('retries', flags.retries, FETCH_DEFAULTS.retries, 0),
};

const config = loadConfigOrExit();
const dir = itemFilePaths(config.ITEM_FILES_DIR).root;

// A bar redrawn in place on a terminal; elsewhere (CI, a log file) a plain line every 5 seconds.
const terminal = process.stderr.isTTY === true;
let latest: FetchProgress | undefined;
const draw = () => {
  if (!latest) return;
  process.stderr.write(`\r\x1b[2K${formatProgress(latest, process.stderr.columns || 80)}`);
};
const plainTimer = terminal ? undefined : setInterval(() => latest && process.stderr.write(`${formatProgress(latest)}\n`), 5_000);

// Ctrl-C once: finish cleanly (no partial file, the manifest written, a summary); twice: leave now
// (the next run removes the temporary files).
const interrupt = new AbortController();
process.on('SIGINT', () => {
  if (interrupt.signal.aborted) process.exit(130);
  interrupt.abort();
});
process.on('SIGTERM', () => interrupt.abort());

process.stderr.write(`item files: ${config.ITEM_ASSETS_URL} → ${dir}\n`);
try {
  const summary = await fetchItemFiles({
    dir,
    assetsUrl: config.ITEM_ASSETS_URL,
    definitions,
    kinds,
    ...limits,
    keepExisting: flags['keep-existing'] === true,
    signal: interrupt.signal,
    onProgress: (progress) => {
      latest = progress;
      if (terminal) draw();
    },
  });
  if (terminal && latest) process.stderr.write('\n');
  process.stdout.write(flags.json ? `${JSON.stringify(summary, null, 2)}\n` : `${formatSummary(summary)}\n`);
  process.exitCode = summary.stopped === 'interrupted' ? 130 : summary.stopped === 'max-bytes' ? 3 : summary.failed > 0 ? 1 : 0;
} catch (error) {
  if (terminal && latest) process.stderr.write('\n');
  process.stderr.write(`item files fetch failed: ${(error as Error).message}\n`);
  process.exitCode = 1;
} finally {
  clearInterval(plainTimer);
}
