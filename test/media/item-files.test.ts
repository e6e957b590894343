import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { generateItemFiles } from '../../shared/media/generate-item-files.ts';
import { parseGlb } from '../../shared/media/glb.ts';
import { itemFileCatalog } from '../../shared/media/item-catalog.ts';
import { itemFileFor, itemFilePath, itemFilePaths, itemFilesStatus } from '../../shared/media/item-files.ts';
import { decodeRgba, paintTexture } from '../../shared/media/paint-texture.ts';
import { MODEL_FAMILIES, type ModelFamily } from '../../shared/media/stand-ins.ts';

/** docs/design.md §10 item files: the stand-in generator, the shared path helpers and seed/wear textures. */

let dir: string;
const catalog = itemFileCatalog();
// One definition per family (the lib has them all), a few paints, stickers and charms: a small, fast subset.
const definitionsByFamily = new Map<ModelFamily, number>();
for (const model of catalog.models) if (!definitionsByFamily.has(model.family)) definitionsByFamily.set(model.family, model.definitionIndex);
const AK47 = 7;
const paints = catalog.paints.slice(0, 3).map((paint) => paint.paintIndex);
const stickers = catalog.stickers.slice(0, 3).map((sticker) => sticker.stickerId);
const charms = catalog.charms.slice(0, 2).map((charm) => charm.charmId);

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'item-files-'));
  await generateItemFiles(dir, { ids: { model: [...definitionsByFamily.values()], paint: paints, sticker: stickers, charm: charms } });
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const FLOAT_COMPONENTS: Record<string, number> = { SCALAR: 1, VEC2: 2, VEC3: 3, VEC4: 4 };
const BYTES_PER_COMPONENT: Record<number, number> = { 5126: 4, 5123: 2, 5125: 4 };

/** The part of a stand-in's glTF JSON these tests read (as the generator writes it). */
type StandInGltf = {
  asset: { version: string };
  nodes: { name: string; extras?: { family?: string } }[];
  meshes: { primitives: { attributes: { POSITION: number; NORMAL: number; TEXCOORD_0: number }; indices: number }[] }[];
  materials: { pbrMetallicRoughness: { baseColorTexture: { index: number } } }[];
  textures: { source: number }[];
  images: { bufferView: number; mimeType: string }[];
  accessors: { bufferView: number; componentType: number; count: number; type: string; min?: number[]; max?: number[] }[];
  bufferViews: { byteOffset: number; byteLength: number }[];
  buffers: { byteLength: number }[];
};

/** Checks a GLB as a loader would and returns its position data. */
function checkGlb(file: string): { json: StandInGltf; positions: Float32Array } {
  const bytes = new Uint8Array(readFileSync(file));
  const parsed = parseGlb(bytes);
  const json = parsed.json as StandInGltf;
  const bin = parsed.bin;
  expect(json.asset.version).toBe('2.0');
  expect(json.buffers).toEqual([{ byteLength: bin.byteLength }]);
  for (const view of json.bufferViews) {
    expect(view.byteOffset % 4).toBe(0);
    expect(view.byteOffset + view.byteLength).toBeLessThanOrEqual(bin.byteLength);
  }
  for (const accessor of json.accessors) {
    const view = json.bufferViews[accessor.bufferView]!;
    expect(accessor.count * FLOAT_COMPONENTS[accessor.type]! * BYTES_PER_COMPONENT[accessor.componentType]!).toBe(view.byteLength);
  }
  const primitive = json.meshes[0]!.primitives[0]!;
  const position = json.accessors[primitive.attributes.POSITION]!;
  expect(json.accessors[primitive.attributes.NORMAL]!.count).toBe(position.count);
  expect(json.accessors[primitive.attributes.TEXCOORD_0]!.count).toBe(position.count);
  const indexView = json.bufferViews[json.accessors[primitive.indices]!.bufferView]!;
  const indices = new Uint16Array(bin.buffer.slice(bin.byteOffset + indexView.byteOffset, bin.byteOffset + indexView.byteOffset + indexView.byteLength));
  expect(Math.max(...indices)).toBeLessThan(position.count);
  expect(indices.length % 3).toBe(0);
  // One material whose base colour texture (the paint goes there) is an embedded PNG.
  expect(json.materials).toHaveLength(1);
  const texture = json.textures[json.materials[0]!.pbrMetallicRoughness.baseColorTexture.index]!;
  const image = json.images[texture.source]!;
  expect(image.mimeType).toBe('image/png');
  const imageView = json.bufferViews[image.bufferView]!;
  expect([...bin.subarray(imageView.byteOffset + 1, imageView.byteOffset + 4)]).toEqual([0x50, 0x4e, 0x47]); // "PNG"
  const positionView = json.bufferViews[position.bufferView]!;
  const positions = new Float32Array(
    bin.buffer.slice(bin.byteOffset + positionView.byteOffset, bin.byteOffset + positionView.byteOffset + positionView.byteLength),
  );
  for (let i = 0; i < positions.length; i++) {
    expect(positions[i]!).toBeGreaterThanOrEqual(position.min![i % 3]! - 1e-6);
    expect(positions[i]!).toBeLessThanOrEqual(position.max![i % 3]! + 1e-6);
  }
  return { json, positions };
}

describe('item files generator', () => {
  test('writes a valid, small GLB for every family, each family with its own geometry', () => {
    expect([...definitionsByFamily.keys()].sort()).toEqual([...MODEL_FAMILIES].sort());
    const shapes = new Set<string>();
    for (const [family, definitionIndex] of definitionsByFamily) {
      const file = itemFileFor(dir, 'model', definitionIndex)!;
      expect(file).toBe(path.join(dir, 'models', `${definitionIndex}.glb`));
      expect(readFileSync(file).byteLength).toBeLessThan(16 * 1024);
      const { json, positions } = checkGlb(file);
      expect(json.nodes[0]!.extras?.family).toBe(family);
      shapes.add(Buffer.from(positions.buffer).toString('base64'));
    }
    expect(shapes.size).toBe(definitionsByFamily.size);
    for (const charmId of charms) checkGlb(itemFileFor(dir, 'charm', charmId)!);
  });

  test('rifles carry sticker slot and charm markers', () => {
    const { json } = checkGlb(itemFileFor(dir, 'model', AK47) ?? itemFileFor(dir, 'model', definitionsByFamily.get('rifle')!)!);
    const names = json.nodes.map((node) => node.name);
    expect(names).toContain('sticker_slot_0');
    expect(names).toContain('charm_attachment');
  });

  test('paint textures are 256×256 PNGs and stickers 128×128 with real transparency', async () => {
    for (const paintIndex of paints) {
      const meta = await sharp(itemFileFor(dir, 'paint', paintIndex)!).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['png', 256, 256]);
    }
    for (const stickerId of stickers) {
      const image = await decodeRgba(readFileSync(itemFileFor(dir, 'sticker', stickerId)!));
      expect([image.width, image.height]).toEqual([128, 128]);
      const alphas = new Set<number>();
      for (let i = 3; i < image.data.length; i += 4) alphas.add(image.data[i]!);
      expect(alphas.has(0)).toBe(true);
      expect(alphas.has(255)).toBe(true);
    }
  });

  test('never overwrites a file already there, and a second run only fills gaps', async () => {
    const own = path.join(mkdtempSync(path.join(tmpdir(), 'item-files-own-')));
    try {
      mkdirSync(path.join(own, 'models'), { recursive: true });
      writeFileSync(path.join(own, 'models', `${AK47}.glb`), 'real extracted model');
      const first = await generateItemFiles(own, { ids: { model: [AK47, 1], paint: [paints[0]!] } });
      expect(first.model).toEqual({ written: 1, skipped: 1 });
      expect(readFileSync(path.join(own, 'models', `${AK47}.glb`), 'utf8')).toBe('real extracted model');
      const second = await generateItemFiles(own, { ids: { model: [AK47, 1], paint: [paints[0]!] } });
      expect(second.model).toEqual({ written: 0, skipped: 2 });
      expect(second.paint).toEqual({ written: 0, skipped: 1 });
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});

describe('paint textures by seed and wear', () => {
  async function pixels(seed: number, wear: number): Promise<Uint8Array> {
    return (await decodeRgba(await paintTexture(paints[0]!, seed, wear, { dir }))).data;
  }
  function differingShare(a: Uint8Array, b: Uint8Array): number {
    let differing = 0;
    for (let i = 0; i < a.length; i += 4) if (a[i] !== b[i] || a[i + 1] !== b[i + 1] || a[i + 2] !== b[i + 2]) differing++;
    return differing / (a.length / 4);
  }
  function meanLuma(image: Uint8Array): number {
    let sum = 0;
    for (let i = 0; i < image.length; i += 4) sum += 0.2126 * image[i]! + 0.7152 * image[i + 1]! + 0.0722 * image[i + 2]!;
    return sum / (image.length / 4);
  }

  test('the same paint, seed and wear give the same pixels; another seed moves the pattern', async () => {
    const seed1 = await pixels(1, 0);
    expect(differingShare(seed1, await pixels(1, 0))).toBe(0);
    expect(differingShare(seed1, await pixels(661, 0))).toBeGreaterThan(0.2);
  });

  test('more wear adds grime: Factory New is almost clean, Battle-Scarred covers much of the paint', async () => {
    const clean = await pixels(5, 0);
    const factoryNew = await pixels(5, 0.03);
    const battleScarred = await pixels(5, 0.9);
    expect(differingShare(clean, factoryNew)).toBeLessThan(0.05);
    expect(differingShare(clean, battleScarred)).toBeGreaterThan(0.3);
    expect(differingShare(clean, battleScarred)).toBeGreaterThan(differingShare(clean, await pixels(5, 0.3)));
    expect(Math.abs(meanLuma(battleScarred) - meanLuma(clean))).toBeGreaterThan(1);
  });

  test('a paint file placed in the directory is the base the seed and wear apply to', async () => {
    const own = mkdtempSync(path.join(tmpdir(), 'item-files-paint-'));
    try {
      mkdirSync(path.join(own, 'paints'));
      const red = await sharp({ create: { width: 64, height: 64, channels: 4, background: { r: 255, g: 0, b: 0, alpha: 1 } } })
        .png()
        .toBuffer();
      writeFileSync(path.join(own, 'paints', '9999.png'), red);
      const image = await decodeRgba(await paintTexture(9999, 3, 0, { dir: own }));
      expect([image.width, image.height, image.data[0], image.data[1]]).toEqual([64, 64, 255, 0]);
    } finally {
      rmSync(own, { recursive: true, force: true });
    }
  });
});

describe('item file paths', () => {
  test('ids are integers only: unknown ids are null and no id reaches outside its folder', () => {
    expect(itemFileFor(dir, 'model', 999_999)).toBeNull();
    expect(itemFileFor(dir, 'model', String(AK47))).toBe(itemFileFor(dir, 'model', AK47));
    for (const id of ['../models/7', '7/../../x', '..', '-1', '7.0', '07', ' 7', '7\u0000', '%2e%2e', '', '1e3', 'Infinity']) {
      expect(itemFilePath(dir, 'model', id)).toBeNull();
      expect(itemFileFor(dir, 'paint', id)).toBeNull();
    }
    for (const id of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 2 ** 53]) expect(itemFilePath(dir, 'sticker', id)).toBeNull();
    expect(itemFilePath(dir, 'charm', 12)).toBe(path.join(itemFilePaths(dir).charms, '12.glb'));
  });

  test('status is ok with counts once models exist, missing for an empty or absent directory', () => {
    expect(itemFilesStatus(dir)).toEqual({
      status: 'ok',
      counts: { models: definitionsByFamily.size, paints: paints.length, stickers: stickers.length, charms: charms.length },
    });
    const empty = mkdtempSync(path.join(tmpdir(), 'item-files-empty-'));
    try {
      expect(itemFilesStatus(empty)).toEqual({ status: 'missing', counts: { models: 0, paints: 0, stickers: 0, charms: 0 } });
      expect(itemFilesStatus(path.join(empty, 'absent')).status).toBe('missing');
      expect(existsSync(path.join(empty, 'absent'))).toBe(false);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
