import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

/**
 * DESIGN 10: the item files the viewer and renders draw, under ITEM_FILES_DIR:
 *   models/<definition_index>.glb   paints/<paint_index>.png   stickers/<sticker_id>.png   charms/<charm_id>.glb
 * Stand-ins come from `npm run item-files:generate`; real extracted game files placed there win
 * (the generator never overwrites a file).
 */
export type ItemFileKind = 'model' | 'paint' | 'sticker' | 'charm';
export const ITEM_FILE_KINDS: readonly ItemFileKind[] = ['model', 'paint', 'sticker', 'charm'];

const LAYOUT: Record<ItemFileKind, { folder: string; extension: string }> = {
  model: { folder: 'models', extension: '.glb' },
  paint: { folder: 'paints', extension: '.png' },
  sticker: { folder: 'stickers', extension: '.png' },
  charm: { folder: 'charms', extension: '.glb' },
};

export type ItemFilePaths = { root: string; models: string; paints: string; stickers: string; charms: string };

/** Absolute folders of each kind (the root resolved against the working directory, as config gives it). */
export function itemFilePaths(dir: string): ItemFilePaths {
  const root = path.resolve(dir);
  return {
    root,
    models: path.join(root, LAYOUT.model.folder),
    paints: path.join(root, LAYOUT.paint.folder),
    stickers: path.join(root, LAYOUT.sticker.folder),
    charms: path.join(root, LAYOUT.charm.folder),
  };
}

/** The ids are the game's unsigned integers; anything else (signs, dots, slashes, leading zeros) names no file. */
function canonicalId(id: number | string): number | null {
  if (typeof id === 'number') return Number.isSafeInteger(id) && id >= 0 ? id : null;
  if (!/^(0|[1-9][0-9]{0,15})$/.test(id)) return null;
  const value = Number(id);
  return Number.isSafeInteger(value) ? value : null;
}

/** Where a kind's file for an id lives, whether or not it exists; null when the id is not an integer. */
export function itemFilePath(dir: string, kind: ItemFileKind, id: number | string): string | null {
  const value = canonicalId(id);
  const layout = LAYOUT[kind];
  if (value === null || !layout) return null;
  // Built from a canonical integer only, so the name cannot leave its folder.
  return path.join(path.resolve(dir), layout.folder, `${value}${layout.extension}`);
}

/** The absolute path of an existing item file, or null for a non-integer id or a file that is not there. */
export function itemFileFor(dir: string, kind: ItemFileKind, id: number | string): string | null {
  const file = itemFilePath(dir, kind, id);
  return file !== null && existsSync(file) ? file : null;
}

export type ItemFileCounts = { models: number; paints: number; stickers: number; charms: number };
export type ItemFilesStatus = { status: 'ok' | 'missing'; counts: ItemFileCounts };

function countFiles(folder: string, extension: string): number {
  try {
    let count = 0;
    for (const name of readdirSync(folder)) if (name.endsWith(extension)) count += 1;
    return count;
  } catch {
    return 0; // folder absent: nothing of that kind
  }
}

/**
 * 'ok' when there is at least one model: without models nothing can be drawn (renders and viewer
 * sessions need them), while a missing paint, sticker or charm only loses that detail.
 */
export function itemFilesStatus(dir: string): ItemFilesStatus {
  const counts: ItemFileCounts = {
    models: countFiles(path.join(path.resolve(dir), LAYOUT.model.folder), LAYOUT.model.extension),
    paints: countFiles(path.join(path.resolve(dir), LAYOUT.paint.folder), LAYOUT.paint.extension),
    stickers: countFiles(path.join(path.resolve(dir), LAYOUT.sticker.folder), LAYOUT.sticker.extension),
    charms: countFiles(path.join(path.resolve(dir), LAYOUT.charm.folder), LAYOUT.charm.extension),
  };
  return { status: counts.models > 0 ? 'ok' : 'missing', counts };
}
