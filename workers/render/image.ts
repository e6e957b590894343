import type { RenderOutput } from '../../shared/media/renders-model.ts';
import { writeBlobBytes } from '../../shared/platform/blob-store.ts';

/**
 * What the engine reads from a page's canvas: raw RGBA from WebGL (3D: rows bottom to top, straight
 * alpha, sRGB), or a PNG of an item card's 2D canvas.
 */
export type DrawnPixels = { data: Buffer; width: number; height: number; encoding?: 'rgba-bottom-up' | 'png' };

/**
 * Post-processing (docs/design.md §10), one sharp pipeline: rows top to bottom (WebGL's are flipped), exactly the requested size,
 * sRGB, PNG or WebP. A transparent background keeps the canvas' alpha; a colour is flattened onto
 * it, so the file is opaque.
 */
export async function finishImage(pixels: DrawnPixels, output: RenderOutput): Promise<Buffer> {
  // Loaded at the first render, like puppeteer-core (engine.ts): sharp and libvips are ~18 MB of RSS.
  const { default: sharp } = await import('sharp');
  let image = pixels.encoding === 'png' ? sharp(pixels.data) : sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: 4 } }).flip();
  image = image.resize(output.width, output.height, { fit: 'fill' }).toColourspace('srgb');
  image = output.background === 'transparent' ? image.ensureAlpha() : image.flatten({ background: output.background }).removeAlpha();
  return output.format === 'png' ? image.png({ compressionLevel: 6 }).toBuffer() : image.webp({ quality: 90, alphaQuality: 100 }).toBuffer();
}

/**
 * Stores the image at its render's one key: written to a temp name of this attempt's own (a stale
 * worker never writes into ours), fsynced, `beforeCommit` (the lease check), then renamed over the
 * key. Every attempt of a render lands on the same key, so a retried job never leaves a second image.
 */
export async function storeImage(
  root: string,
  key: string,
  attempt: string,
  bytes: Buffer,
  beforeCommit: () => Promise<void>,
): Promise<{ bytes: number; sha256: string }> {
  return writeBlobBytes(root, key, bytes, { tempTag: attempt, beforeCommit });
}
