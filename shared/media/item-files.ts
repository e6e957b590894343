import { closeSync, existsSync, openSync, readdirSync, readSync, type Stats, statSync } from 'node:fs';
import path from 'node:path';
import { STAND_IN_GENERATOR } from './glb.ts';

/**
 * docs/design.md §10: the item files the viewer and renders draw, under ITEM_FILES_DIR:
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

/**
 * docs/design.md §18: a real 3D model is drawn in 3D; a generated stand-in (or no model) is drawn as an item
 * card. A stand-in is told by the `asset.generator` our generator writes into every GLB it makes
 * (glb.ts STAND_IN_GENERATOR): any other GLB, whoever made it, is real. Only the GLB header and its
 * JSON chunk are read, and the answer is kept per file until its size or mtime changes.
 */
export type ModelSource = 'real' | 'stand-in';
export type RenderMode = '3d' | 'card';

const MODEL_JSON_LIMIT = 4 * 1024 * 1024; // a JSON chunk larger than this is a real model's (ours are ~2 KB)
const modelSources = new Map<string, { size: number; mtimeMs: number; source: ModelSource }>();

function readModelSource(file: string, size: number): ModelSource {
  const descriptor = openSync(file, 'r');
  try {
    const header = Buffer.alloc(20);
    if (readSync(descriptor, header, 0, 20, 0) < 20 || header.readUInt32LE(0) !== 0x46546c67 || header.readUInt32LE(16) !== 0x4e4f534a) return 'real';
    const jsonLength = header.readUInt32LE(12);
    if (jsonLength > MODEL_JSON_LIMIT || 20 + jsonLength > size) return 'real';
    const json = Buffer.alloc(jsonLength);
    readSync(descriptor, json, 0, jsonLength, 20);
    const generator = (JSON.parse(json.toString('utf8')) as { asset?: { generator?: unknown } }).asset?.generator;
    return generator === STAND_IN_GENERATOR ? 'stand-in' : 'real';
  } catch {
    return 'real'; // not JSON we can read: not one of ours
  } finally {
    closeSync(descriptor);
  }
}

/** Whether the model file of a definition is real or a stand-in; null when there is none. */
export function modelSource(dir: string, definitionIndex: number): ModelSource | null {
  const file = itemFilePath(dir, 'model', definitionIndex);
  if (file === null) return null;
  let stats: Stats;
  try {
    stats = statSync(file);
  } catch {
    return null;
  }
  const known = modelSources.get(file);
  if (known && known.size === stats.size && known.mtimeMs === stats.mtimeMs) return known.source;
  const source = readModelSource(file, stats.size);
  if (modelSources.size > 20_000) modelSources.clear();
  modelSources.set(file, { size: stats.size, mtimeMs: stats.mtimeMs, source });
  return source;
}

/** docs/design.md §18: how renders and viewer sessions draw a definition: 3D with a real model, else an item card. */
export function renderModeFor(dir: string, definitionIndex: number): RenderMode {
  return modelSource(dir, definitionIndex) === 'real' ? '3d' : 'card';
}

export type RenderModeSummary = { mode: RenderMode | 'mixed'; real_models: number; stand_in_models: number };
let summaryCache: { root: string; mtimeMs: number; at: number; summary: RenderModeSummary } | undefined;
const SUMMARY_TTL_MS = 30_000;

/**
 * GET /v2/status's render mode: `card` when no model is real (stand-ins only, or none), `3d` when
 * every model is real, `mixed` otherwise (real models in 3D, the other definitions as cards). Kept
 * 30 s, or until the models folder changes.
 */
export function renderModeSummary(dir: string, now = Date.now()): RenderModeSummary {
  const folder = itemFilePaths(dir).models;
  let mtimeMs = -1;
  try {
    mtimeMs = statSync(folder).mtimeMs;
  } catch {
    // no folder: no models
  }
  if (summaryCache && summaryCache.root === folder && summaryCache.mtimeMs === mtimeMs && now - summaryCache.at < SUMMARY_TTL_MS) return summaryCache.summary;
  let real = 0;
  let standIn = 0;
  if (mtimeMs >= 0) {
    for (const name of readdirSync(folder)) {
      const match = /^(0|[1-9][0-9]*)\.glb$/.exec(name);
      if (!match) continue;
      const source = modelSource(dir, Number(match[1]));
      if (source === 'real') real += 1;
      else if (source === 'stand-in') standIn += 1;
    }
  }
  const summary: RenderModeSummary = { mode: real === 0 ? 'card' : standIn === 0 ? '3d' : 'mixed', real_models: real, stand_in_models: standIn };
  summaryCache = { root: folder, mtimeMs, at: now, summary };
  return summary;
}
