/**
 * The local image fake (docs/design.md §18): Steam's icon CDN and the host of @ianlucas/cs2-lib's assets on one
 * origin, so tests and `npm start` set STEAM_IMAGE_URL = ITEM_ASSETS_URL = fake.url.
 *
 *   GET /economy/image/<icon_url>                     Steam's icon CDN form: PNG (image/png), 256×192
 *   GET /economy/image/<icon_url>/<n>fx<n>f           the same image at n px wide (n×¾n; n up to 1024)
 *   GET /images/<name>.webp, …_light|_medium|_heavy.webp   cs2-lib's image paths: WebP (lossless), 256×192
 *   GET /models/<hash>.glb                            a small valid GLB (the stand-in shape, marked FAKE_MODEL_GENERATOR: real)
 *   GET /textures/<hash>.webp                         a paint texture: WebP (lossless), 256×256
 *
 * Every image is distinct per path and deterministic: an item-shaped body of one colour and a band of a
 * second colour on a transparent background (FAKE_IMAGE_LAYOUT), both colours from a hash of the path
 * (expectedColourOf). Steam's sized form shares the colours of its unsized path (it is the same icon);
 * every cs2-lib wear variant is a path of its own, so it has colours of its own. Bodies are built once
 * per path and kept in memory (the newest MAX_CACHED).
 *
 * API for tests:
 *   startImageFake({ port?, hostname?, unref? }) → ImageFake (synchronous; awaiting it works too)
 *   fake.url                              base URL, e.g. http://127.0.0.1:PORT
 *   fake.stop()
 *   fake.requests                         { path, at (ms) }, oldest first (the last 10 000)
 *   fake.fault(pathOrPrefix, kind | null) requests whose path is it, or starts with it (the longest match
 *                                         wins), answer with the fault until cleared with null
 *   fake.clearFaults()
 * Fault kinds: 'slow' (the image, after 30 s), 'huge' (a 50 MB image/png body, streamed), 'not_image'
 * (200 text/html), 'redirect_private' (302 to http://127.0.0.1:1/x), 'redirect' (302 to another image
 * of this fake), 'error' (500), 'not_found' (404).
 * Over HTTP, for `npm start` (another process): POST /_control/faults {path, kind | null};
 * DELETE /_control/faults clears them; GET /_control/requests → {requests}.
 */

import { createHash } from 'node:crypto';
import type { Server } from 'bun';
import sharp from 'sharp';
import { buildGlb } from '../../../shared/media/glb.ts';
import { standInModel } from '../../../shared/media/stand-ins.ts';

export const IMAGE_FAULT_KINDS = ['slow', 'huge', 'not_image', 'redirect_private', 'redirect', 'error', 'not_found'] as const;
export type ImageFaultKind = (typeof IMAGE_FAULT_KINDS)[number];

export type Rgb = readonly [number, number, number];

export type ImageFake = {
  url: string;
  stop(): Promise<void>;
  requests: { path: string; at: number }[];
  fault(pathOrPrefix: string, kind: ImageFaultKind | null): void;
  clearFaults(): void;
};

/** Width and height of the unsized images (Steam's icons are ~4:3 with a transparent background). */
export const FAKE_IMAGE_SIZE = { width: 256, height: 192 } as const;
export const FAKE_TEXTURE_SIZE = 256;
/**
 * Where the two colours are drawn, as fractions of width and height: the body (primary colour) and a
 * band below it (secondary colour); everything else is transparent. Sample (0.5, 0.4) for the primary
 * and (0.5, 0.7) for the secondary.
 */
export const FAKE_IMAGE_LAYOUT = {
  body: { x0: 0.08, x1: 0.92, y0: 0.2, y1: 0.6 },
  band: { x0: 0.08, x1: 0.92, y0: 0.6, y1: 0.8 },
} as const;
/**
 * The fake's models stand for cs2-lib's real ones: the stand-in generator's shape under another
 * `asset.generator`, so a model fetched from here (npm run item-files:fetch) is drawn in 3D, not as a card.
 */
export const FAKE_MODEL_GENERATOR = 'cs2-pricing-platform image fake (a cs2-lib model)';
/** The 'huge' fault's body: larger than any IMAGE_MAX_BYTES a test would set. */
export const HUGE_BODY_BYTES = 50 * 1024 * 1024;
/** The 'slow' fault's delay. */
export const SLOW_FAULT_MS = 30_000;
/** Where 'redirect_private' points. */
export const PRIVATE_REDIRECT_TARGET = 'http://127.0.0.1:1/x';
/** Where 'redirect' points (a path of this fake that serves an image). */
export const REDIRECT_TARGET_PATH = '/images/redirected.webp';

const MAX_LOGGED_REQUESTS = 10_000;
const MAX_CACHED = 2_000;
const MAX_SIZE = 1_024;

const STEAM_ICON = /^\/economy\/image\/([^/]+)(?:\/(\d{1,4})fx(\d{1,4})f)?\/?$/;
const LIB_IMAGE = /^\/images\/[A-Za-z0-9_.-]+\.webp$/;
const MODEL = /^\/models\/[A-Za-z0-9_.-]+\.glb$/;
const TEXTURE = /^\/textures\/[A-Za-z0-9_.-]+\.webp$/;

function pathOf(pathOrUrl: string): string {
  return /^https?:\/\//.test(pathOrUrl) ? new URL(pathOrUrl).pathname : pathOrUrl;
}

/** Whose colours an image has: Steam's sized form is the same icon as its unsized path. */
function identityOf(path: string): string {
  const steam = STEAM_ICON.exec(path);
  return steam ? `/economy/image/${steam[1]}` : path;
}

function colourFromBytes(bytes: Uint8Array, at: number): Rgb {
  // 40–215 per channel: never near black, white or the transparent background's grey.
  return [40 + (bytes[at]! % 176), 40 + (bytes[at + 1]! % 176), 40 + (bytes[at + 2]! % 176)];
}

function distance(a: Rgb, b: Rgb): number {
  return Math.abs(a[0] - b[0]) + Math.abs(a[1] - b[1]) + Math.abs(a[2] - b[2]);
}

/**
 * The two colours of the image served at `pathOrUrl` (a path or a full URL of this fake): `primary`
 * fills FAKE_IMAGE_LAYOUT.body, `secondary` FAKE_IMAGE_LAYOUT.band. Pure, so a test computes them
 * without the fake.
 */
export function expectedColourOf(pathOrUrl: string): { primary: Rgb; secondary: Rgb } {
  const digest = createHash('sha256')
    .update(identityOf(pathOf(pathOrUrl)))
    .digest();
  const primary = colourFromBytes(digest, 0);
  let secondary = colourFromBytes(digest, 3);
  if (distance(primary, secondary) < 120) secondary = [255 - primary[0], 255 - primary[1], 255 - primary[2]];
  if (distance(primary, secondary) < 120) secondary = [primary[0] > 127 ? 40 : 215, primary[1] > 127 ? 40 : 215, primary[2] > 127 ? 40 : 215];
  return { primary, secondary };
}

/** The raw RGBA pixels of the image at `path`, `width`×`height`. */
export function fakeImagePixels(path: string, width: number, height: number): Buffer {
  const { primary, secondary } = expectedColourOf(path);
  const data = Buffer.alloc(width * height * 4);
  const paint = (area: { x0: number; x1: number; y0: number; y1: number }, colour: Rgb) => {
    const x0 = Math.round(area.x0 * width);
    const x1 = Math.round(area.x1 * width);
    const y0 = Math.round(area.y0 * height);
    const y1 = Math.round(area.y1 * height);
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const at = (y * width + x) * 4;
        data[at] = colour[0];
        data[at + 1] = colour[1];
        data[at + 2] = colour[2];
        data[at + 3] = 255;
      }
    }
  };
  paint(FAKE_IMAGE_LAYOUT.body, primary);
  paint(FAKE_IMAGE_LAYOUT.band, secondary);
  return data;
}

type Body = { bytes: Uint8Array; contentType: string };

async function buildBody(path: string): Promise<Body | null> {
  const steam = STEAM_ICON.exec(path);
  if (steam) {
    const size = steam[2] === undefined ? null : Math.min(MAX_SIZE, Math.max(1, Number(steam[2])));
    const width = size ?? FAKE_IMAGE_SIZE.width;
    const height = size === null ? FAKE_IMAGE_SIZE.height : Math.max(1, Math.round((size * 3) / 4));
    const bytes = await sharp(fakeImagePixels(path, width, height), { raw: { width, height, channels: 4 } })
      .png()
      .toBuffer();
    return { bytes, contentType: 'image/png' };
  }
  if (LIB_IMAGE.test(path)) {
    const { width, height } = FAKE_IMAGE_SIZE;
    const bytes = await sharp(fakeImagePixels(path, width, height), { raw: { width, height, channels: 4 } })
      .webp({ lossless: true })
      .toBuffer();
    return { bytes, contentType: 'image/webp' };
  }
  if (TEXTURE.test(path)) {
    const bytes = await sharp(fakeImagePixels(path, FAKE_TEXTURE_SIZE, FAKE_TEXTURE_SIZE), {
      raw: { width: FAKE_TEXTURE_SIZE, height: FAKE_TEXTURE_SIZE, channels: 4 },
    })
      .webp({ lossless: true })
      .toBuffer();
    return { bytes, contentType: 'image/webp' };
  }
  if (MODEL.test(path)) {
    const { primary } = expectedColourOf(path);
    const white = await sharp({ create: { width: 4, height: 4, channels: 4, background: { r: 255, g: 255, b: 255, alpha: 1 } } })
      .png()
      .toBuffer();
    const bytes = buildGlb(standInModel('rifle', [primary[0] / 255, primary[1] / 255, primary[2] / 255, 1]), white, FAKE_MODEL_GENERATOR);
    return { bytes, contentType: 'model/gltf-binary' };
  }
  return null;
}

/** A 50 MB body that starts like a PNG and is produced as it is read (a client that stops reading stops it). */
function hugeBody(): ReadableStream<Uint8Array> {
  const chunkBytes = 64 * 1024;
  let sent = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= HUGE_BODY_BYTES) return controller.close();
      const chunk = new Uint8Array(chunkBytes);
      if (sent === 0) chunk.set([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
      controller.enqueue(chunk);
      sent += chunkBytes;
    },
  });
}

/** `unref`: the fake does not keep the process alive (a test process's shared fake, test/helpers.ts). */
export function startImageFake(options: { port?: number; hostname?: string; unref?: boolean } = {}): ImageFake {
  const hostname = options.hostname ?? '127.0.0.1';
  const requests: { path: string; at: number }[] = [];
  const faults = new Map<string, ImageFaultKind>();
  const cache = new Map<string, Promise<Body | null>>();
  const sleepers = new Set<() => void>();
  let baseUrl = '';

  const faultOf = (path: string): ImageFaultKind | undefined => {
    const exact = faults.get(path);
    if (exact) return exact;
    let best: string | undefined;
    for (const prefix of faults.keys()) if (path.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
    return best === undefined ? undefined : faults.get(best);
  };

  const setFault = (pathOrPrefix: string, kind: ImageFaultKind | null) => {
    const path = pathOf(pathOrPrefix);
    if (kind === null) faults.delete(path);
    else faults.set(path, kind);
  };

  const bodyOf = (path: string): Promise<Body | null> => {
    let body = cache.get(path);
    if (!body) {
      body = buildBody(path);
      cache.set(path, body);
      if (cache.size > MAX_CACHED) cache.delete(cache.keys().next().value!);
    }
    return body;
  };

  /** The fault's answer; null: answer normally (after the 'slow' wait). */
  const answerFault = async (kind: ImageFaultKind): Promise<Response | null> => {
    switch (kind) {
      case 'slow':
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            sleepers.delete(done);
            resolve();
          };
          const timer = setTimeout(done, SLOW_FAULT_MS);
          sleepers.add(done);
        });
        return null;
      case 'huge':
        return new Response(hugeBody(), { headers: { 'content-type': 'image/png' } });
      case 'not_image':
        return new Response('<html><body><h1>Access denied</h1></body></html>', { headers: { 'content-type': 'text/html; charset=UTF-8' } });
      case 'redirect_private':
        return new Response(null, { status: 302, headers: { location: PRIVATE_REDIRECT_TARGET } });
      case 'redirect':
        return new Response(null, { status: 302, headers: { location: `${baseUrl}${REDIRECT_TARGET_PATH}` } });
      case 'error':
        return new Response('<html><body><h1>500 Internal Server Error</h1></body></html>', { status: 500, headers: { 'content-type': 'text/html' } });
      case 'not_found':
        return notFound();
    }
  };

  const server: Server<undefined> = Bun.serve({
    port: options.port ?? 0,
    hostname,
    // The 'slow' fault holds a request for 30 s, past Bun's default idle timeout of 10 s.
    idleTimeout: 60,
    async fetch(request) {
      const url = new URL(request.url);
      const path = url.pathname;
      if (path === '/_control/faults') return control(request, setFault, () => faults.clear());
      if (path === '/_control/requests' && request.method === 'GET') return Response.json({ requests });
      requests.push({ path, at: Date.now() });
      if (requests.length > MAX_LOGGED_REQUESTS) requests.shift();
      if (request.method !== 'GET' && request.method !== 'HEAD') return new Response(null, { status: 405, headers: { allow: 'GET, HEAD' } });
      const kind = faultOf(path);
      if (kind) {
        const answer = await answerFault(kind);
        if (answer) return answer;
      }
      const body = await bodyOf(path);
      if (!body) return notFound();
      return new Response(body.bytes, {
        headers: { 'content-type': body.contentType, 'cache-control': 'public, max-age=31536000', etag: `"${createHash('sha1').update(path).digest('hex')}"` },
      });
    },
  });
  baseUrl = `http://${hostname}:${server.port}`;
  if (options.unref) server.unref();

  return {
    url: baseUrl,
    requests,
    fault: setFault,
    clearFaults: () => faults.clear(),
    async stop() {
      for (const wake of [...sleepers]) wake();
      await server.stop(true);
    },
  };
}

function notFound(): Response {
  return new Response('<html><body><h1>Not Found</h1></body></html>', { status: 404, headers: { 'content-type': 'text/html; charset=UTF-8' } });
}

async function control(request: Request, setFault: (path: string, kind: ImageFaultKind | null) => void, clear: () => void): Promise<Response> {
  if (request.method === 'DELETE') {
    clear();
    return Response.json({ cleared: true });
  }
  if (request.method !== 'POST') return new Response(null, { status: 405, headers: { allow: 'POST, DELETE' } });
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return Response.json({ error: 'body must be JSON {path, kind}' }, { status: 400 });
  }
  const { path, kind } = (body ?? {}) as { path?: unknown; kind?: unknown };
  if (typeof path !== 'string' || !path.startsWith('/')) return Response.json({ error: 'path must start with /' }, { status: 400 });
  if (kind !== null && !IMAGE_FAULT_KINDS.includes(kind as ImageFaultKind)) {
    return Response.json({ error: `kind must be null or one of ${IMAGE_FAULT_KINDS.join(', ')}` }, { status: 400 });
  }
  setFault(path, kind as ImageFaultKind | null);
  return Response.json({ path, kind });
}
