import { readFileSync, renameSync, type Stats, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { type ItemFileKind, itemFilePath } from './item-files.ts';

/**
 * Which item files came from cs2-lib (docs/design.md §18): `npm run item-files:fetch` records every file it
 * wrote in ITEM_FILES_DIR/.source.json, and a re-run skips exactly what is recorded and unchanged
 * (docs/decisions.md "Item files from cs2-lib"). Renders choose 3D or a card by the model itself
 * (item-files.ts modelSource: any GLB without the stand-in mark is real); the manifest also covers
 * paints, whose PNGs carry no such mark.
 *
 *   {"schema": 1, "files": {"models/7.glb": {"source": "cs2-lib", "upstream": "/models/<sha256>.glb",
 *     "url": "https://cdn.cstrike.app/models/<sha256>.glb", "bytes": 1234567, "upstream_bytes": 1234567,
 *     "sha256": "<hex of the file as written>", "fetched_at": "2026-01-01T00:00:00.000Z"}, …}}
 *
 * Keys are paths relative to ITEM_FILES_DIR with `/`. `bytes` is the size of the file as written (a
 * paint is the upstream WebP converted to PNG), so a reader checks that the file is still the one
 * fetched with a stat instead of a hash; `upstream` is cs2-lib's path, content-addressed, so a newer
 * library naming another path makes the next fetch replace the file.
 */
export const ITEM_FILES_SOURCE_NAME = '.source.json';

const entrySchema = z.object({
  source: z.literal('cs2-lib'),
  upstream: z.string(),
  url: z.string(),
  bytes: z.number().int().nonnegative(),
  upstream_bytes: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  fetched_at: z.string(),
});
const sourceSchema = z.object({ schema: z.literal(1), files: z.record(z.string(), entrySchema) });

export type ItemFileSourceEntry = z.infer<typeof entrySchema>;
export type ItemFilesSource = z.infer<typeof sourceSchema>;

/** The manifest's path under an item files directory. */
export function itemFilesSourcePath(dir: string): string {
  return path.join(path.resolve(dir), ITEM_FILES_SOURCE_NAME);
}

/** The key of a kind's file for an id in the manifest (`models/7.glb`), or null for a non-integer id. */
export function itemFileSourceKey(dir: string, kind: ItemFileKind, id: number | string): string | null {
  const file = itemFilePath(dir, kind, id);
  return file === null ? null : path.relative(path.resolve(dir), file).split(path.sep).join('/');
}

type Cached = { mtimeMs: number; size: number; source: ItemFilesSource };
const cache = new Map<string, Cached>();

/**
 * The manifest of `dir`, empty when there is none or it cannot be read (a damaged manifest only
 * means the next fetch writes its files again). Re-read only when the file changed (size or mtime),
 * so a render may call this per item.
 */
export function readItemFilesSource(dir: string): ItemFilesSource {
  const file = itemFilesSourcePath(dir);
  let stat: Stats;
  try {
    stat = statSync(file);
  } catch {
    cache.delete(file);
    return { schema: 1, files: {} };
  }
  const hit = cache.get(file);
  if (hit && hit.mtimeMs === stat.mtimeMs && hit.size === stat.size) return hit.source;
  let source: ItemFilesSource;
  try {
    source = sourceSchema.parse(JSON.parse(readFileSync(file, 'utf8')));
  } catch {
    source = { schema: 1, files: {} };
  }
  cache.set(file, { mtimeMs: stat.mtimeMs, size: stat.size, source });
  return source;
}

/** Writes the manifest whole (temporary file, then rename), so a reader never sees half of it. */
export function writeItemFilesSource(dir: string, source: ItemFilesSource): void {
  const file = itemFilesSourcePath(dir);
  const temporary = `${file}.${process.pid}.tmp`;
  const sorted = Object.fromEntries(Object.entries(source.files).sort(([a], [b]) => a.localeCompare(b)));
  writeFileSync(temporary, `${JSON.stringify({ schema: 1, files: sorted }, null, 1)}\n`);
  renameSync(temporary, file);
}

/** The manifest entry of a file when the file on disk is still the one recorded (same size), else null. */
export function fetchedItemFile(dir: string, kind: ItemFileKind, id: number | string): ItemFileSourceEntry | null {
  const key = itemFileSourceKey(dir, kind, id);
  if (key === null) return null;
  const entry = readItemFilesSource(dir).files[key];
  if (!entry) return null;
  try {
    return statSync(path.join(path.resolve(dir), key)).size === entry.bytes ? entry : null;
  } catch {
    return null; // recorded, then deleted
  }
}
