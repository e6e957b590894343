import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { paintInfo } from './item-catalog.ts';
import { itemFileFor } from './item-files.ts';
import { applySeedAndWear, paintBaseTexture, type RawImage } from './stand-ins.ts';

/**
 * docs/design.md §10: the paint texture of one item (paint, seed, wear) as a PNG. The base is the file
 * paints/<paint_index>.png when `dir` holds one (a real extracted texture wins), else the procedural
 * stand-in; the seed places it and the wear adds grime (stand-ins.ts applySeedAndWear). The viewer
 * may instead load the base file and apply paintSeedTransform / paintRoughness itself.
 */
export async function paintTexture(paintIndex: number, seed: number, wear: number, options: { dir?: string } = {}): Promise<Buffer> {
  const file = options.dir ? itemFileFor(options.dir, 'paint', paintIndex) : null;
  const base = file ? await decodeRgba(await readFile(file)) : paintBaseTexture(paintInfo(paintIndex));
  return encodePng(applySeedAndWear(base, seed, wear));
}

export async function decodeRgba(bytes: Uint8Array): Promise<RawImage> {
  const { data, info } = await sharp(bytes).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height, channels: 4 };
}

export function encodePng(image: RawImage): Promise<Buffer> {
  return sharp(image.data, { raw: { width: image.width, height: image.height, channels: image.channels } })
    .png({ compressionLevel: 6 })
    .toBuffer();
}
