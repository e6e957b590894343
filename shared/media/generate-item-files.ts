import { existsSync, linkSync, mkdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import sharp from 'sharp';
import { buildGlb } from './glb.ts';
import { itemFileCatalog } from './item-catalog.ts';
import { type ItemFileKind, itemFilePath, itemFilePaths } from './item-files.ts';
import { encodePng } from './paint-texture.ts';
import { hexColour, MODEL_FAMILIES, type ModelFamily, paintBaseTexture, standInModel, stickerImage } from './stand-ins.ts';

export type GenerateOptions = {
  /** Kinds to write (all by default). */
  kinds?: readonly ItemFileKind[];
  /** Only these ids per kind, none of a kind left out (tests write a handful); ids the catalog lacks are written too. */
  ids?: Partial<Record<ItemFileKind, readonly number[]>>;
};
export type KindCounts = { written: number; skipped: number };
export type GenerateReport = Record<ItemFileKind, KindCounts> & { ms: number };

/**
 * Writes the docs/design.md §10 stand-ins under `dir`, never replacing a file that is there (real extracted
 * game files win, and a second run only fills gaps). Each file appears whole or not at all: written
 * to a temporary name, then hard-linked into place, which fails if the name exists (two concurrent
 * runs cannot clobber each other either). Models are written last, so a directory with models (what
 * itemFilesStatus calls ok) went through paints, stickers and charms first.
 */
export async function generateItemFiles(dir: string, options: GenerateOptions = {}): Promise<GenerateReport> {
  const started = performance.now();
  const kinds = new Set(options.kinds ?? ['paint', 'sticker', 'charm', 'model']);
  const paths = itemFilePaths(dir);
  for (const folder of [paths.models, paths.paints, paths.stickers, paths.charms]) mkdirSync(folder, { recursive: true });
  const catalog = itemFileCatalog();
  const report: GenerateReport = { model: zero(), paint: zero(), sticker: zero(), charm: zero(), ms: 0 };
  const pick = <T>(kind: ItemFileKind, entries: T[], idOf: (entry: T) => number, make: (id: number) => T): T[] => {
    if (!kinds.has(kind)) return [];
    if (!options.ids) return entries;
    const wanted = options.ids[kind] ?? [];
    const known = new Map(entries.map((entry) => [idOf(entry), entry]));
    return wanted.map((id) => known.get(id) ?? make(id));
  };

  // The placeholder texture inside every model (the viewer swaps in the paint): 4×4 white.
  const white = await sharp({ create: { width: 4, height: 4, channels: 4, background: { r: 255, g: 255, b: 255, alpha: 1 } } })
    .png()
    .toBuffer();
  const concurrency = Math.max(2, availableParallelism() * 2);

  const paints = pick(
    'paint',
    catalog.paints,
    (p) => p.paintIndex,
    (paintIndex) => ({ paintIndex, name: undefined, rarity: undefined }),
  );
  await inBatches(paints, concurrency, async (paint) => {
    const file = itemFilePath(dir, 'paint', paint.paintIndex)!;
    if (existsSync(file)) return void report.paint.skipped++;
    count(report.paint, writeNew(file, await encodePng(paintBaseTexture(paint))));
  });

  const stickers = pick(
    'sticker',
    catalog.stickers,
    (s) => s.stickerId,
    (stickerId) => ({ stickerId, rarity: undefined }),
  );
  await inBatches(stickers, concurrency, async (sticker) => {
    const file = itemFilePath(dir, 'sticker', sticker.stickerId)!;
    if (existsSync(file)) return void report.sticker.skipped++;
    count(report.sticker, writeNew(file, await encodePng(stickerImage(sticker))));
  });

  // Charms share one shape, tinted by rarity: built once per colour.
  const charmBytes = new Map<string, Uint8Array>();
  for (const charm of pick(
    'charm',
    catalog.charms,
    (c) => c.charmId,
    (charmId) => ({ charmId, rarity: undefined }),
  )) {
    const file = itemFilePath(dir, 'charm', charm.charmId)!;
    if (existsSync(file)) {
      report.charm.skipped++;
      continue;
    }
    const key = charm.rarity ?? '';
    let bytes = charmBytes.get(key);
    if (!bytes) {
      const [r, g, b] = hexColour(charm.rarity, [200, 200, 200]).map((c) => c / 255);
      bytes = buildGlb(standInModel('charm', [r!, g!, b!, 1]), white);
      charmBytes.set(key, bytes);
    }
    count(report.charm, writeNew(file, bytes));
  }

  const modelBytes = new Map<ModelFamily, Uint8Array>(MODEL_FAMILIES.map((family) => [family, buildGlb(standInModel(family), white)]));
  for (const model of pick(
    'model',
    catalog.models,
    (m) => m.definitionIndex,
    (definitionIndex) => ({ definitionIndex, family: 'other' as ModelFamily }),
  )) {
    const file = itemFilePath(dir, 'model', model.definitionIndex)!;
    if (existsSync(file)) {
      report.model.skipped++;
      continue;
    }
    count(report.model, writeNew(file, modelBytes.get(model.family)!));
  }

  report.ms = Math.round(performance.now() - started);
  return report;
}

function zero(): KindCounts {
  return { written: 0, skipped: 0 };
}

function count(counts: KindCounts, written: boolean): void {
  if (written) counts.written++;
  else counts.skipped++;
}

/** True when written; false when the file appeared meanwhile (someone else's file is kept). */
function writeNew(file: string, bytes: Uint8Array): boolean {
  const temporary = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
  writeFileSync(temporary, bytes, { flag: 'wx' });
  try {
    linkSync(temporary, file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw error;
  } finally {
    unlinkSync(temporary);
  }
}

/** Runs `work` over the items with at most `limit` in flight (sharp encodes on libuv's thread pool). */
async function inBatches<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const runners = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) await work(items[next++]!);
  });
  await Promise.all(runners);
}
