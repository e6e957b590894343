import { createHash, randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { blobPath, writeBlobBytes } from '../../platform/blob-store.ts';
import type { Config } from '../../platform/config.ts';
import type { Logger } from '../../platform/logger.ts';
import { pinnedUrl } from '../../webhooks/send.ts';
import { hostOf, type Lookup, parseWebhookUrl, refusalReason, resolveTarget, TargetRefusedError } from '../../webhooks/targets.ts';

/**
 * Resized item images kept in the blob store (docs/design.md §18; docs/decisions.md "Item images"). An
 * upstream image is fetched once per (url, size, format): checked like a webhook target, never
 * through a redirect, within IMAGE_FETCH_TIMEOUT_MS and IMAGE_MAX_BYTES, decoded by sharp (anything
 * it cannot decode is not an image), fitted into size×size on a transparent background, sRGB, and
 * encoded PNG or WebP. Nothing is stored when any step fails. In front of the blob store, each
 * process keeps the newest encoded images in memory (bounded by bytes), shares one upstream fetch
 * between concurrent misses, and remembers a failed url for a few seconds.
 */

export const IMAGE_FORMATS = ['png', 'webp'] as const;
export type ImageFormat = (typeof IMAGE_FORMATS)[number];
export const MIN_IMAGE_SIZE = 64;
export const MAX_IMAGE_SIZE = 1024;
export const IMAGE_CONTENT_TYPES: Record<ImageFormat, string> = { png: 'image/png', webp: 'image/webp' };

/** A failed url is not fetched again for this long (per process): a broken upstream is not hammered. */
export const FAILURE_TTL_MS = 10_000;
/** The encoded images each process keeps in memory, by their bytes. */
export const RECENT_IMAGES_MAX_BYTES = 32 * 1024 * 1024;
/** A decoded upstream image may have at most this many pixels (a small file can claim a huge canvas). */
export const MAX_INPUT_PIXELS = 4096 * 4096;
/** What sharp may decode from an upstream: the raster formats image CDNs serve (no SVG, PDF or TIFF). */
const ACCEPTED_INPUT_FORMATS = new Set(['png', 'jpeg', 'webp', 'gif', 'avif', 'heif']);

export type CachedImage = { bytes: Uint8Array; etag: string; contentType: string };
export type ImageRequest = { url: string; size: number; format: ImageFormat };

export type ImageFailure = 'refused' | 'timeout' | 'too_large' | 'redirect' | 'upstream_status' | 'connection' | 'not_an_image';

/** The upstream image could not be had (nothing was stored). `retryAfterSeconds`: when asking again may help. */
export class ImageUnavailableError extends Error {
  override name = 'ImageUnavailableError';
  constructor(
    readonly reason: ImageFailure,
    message: string,
    readonly retryAfterSeconds: number = Math.ceil(FAILURE_TTL_MS / 1000),
  ) {
    super(message);
  }
}

/** A caller asked for a size or format this cache does not make (a programming error, not the client's input). */
export class InvalidImageRequestError extends Error {
  override name = 'InvalidImageRequestError';
}

/** The size actually made: the next power of two at or above `size` (64, 128, 256, 512 or 1024). */
export function roundImageSize(size: number): number {
  if (!Number.isInteger(size) || size < MIN_IMAGE_SIZE || size > MAX_IMAGE_SIZE) {
    throw new InvalidImageRequestError(`image size must be an integer from ${MIN_IMAGE_SIZE} to ${MAX_IMAGE_SIZE}`);
  }
  let rounded = MIN_IMAGE_SIZE;
  while (rounded < size) rounded *= 2;
  return rounded;
}

/** The blob key of one (url, rounded size, format): a digest, so any url makes a valid, fixed-length key. */
export function imageBlobKey(url: string, size: number, format: ImageFormat): string {
  const digest = createHash('sha256').update(`${url}\n${size}\n${format}`).digest('hex');
  return `images/${digest.slice(0, 2)}/${digest}.${format}`;
}

/** Strong ETag of the stored bytes. */
export function imageEtag(bytes: Uint8Array): string {
  return `"${createHash('sha256').update(bytes).digest('hex')}"`;
}

/** The newest encoded images, evicted oldest-used first once their bytes pass `maxBytes`. */
export class RecentImages {
  private readonly entries = new Map<string, CachedImage>();
  private bytes = 0;
  constructor(readonly maxBytes: number) {}

  get(key: string): CachedImage | undefined {
    const entry = this.entries.get(key);
    if (entry) {
      // Map order is insertion order: re-inserting marks it the newest.
      this.entries.delete(key);
      this.entries.set(key, entry);
    }
    return entry;
  }

  set(key: string, image: CachedImage): void {
    if (image.bytes.byteLength > this.maxBytes) return;
    const previous = this.entries.get(key);
    if (previous) {
      this.entries.delete(key);
      this.bytes -= previous.bytes.byteLength;
    }
    this.entries.set(key, image);
    this.bytes += image.bytes.byteLength;
    for (const [oldest, entry] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.bytes -= entry.bytes.byteLength;
    }
  }

  get size(): number {
    return this.entries.size;
  }

  get totalBytes(): number {
    return this.bytes;
  }
}

/** What one process remembers between calls. Tests pass their own so nothing leaks between them. */
export class ImageCacheState {
  readonly recent: RecentImages;
  /** Misses being made, by blob root and key: concurrent callers await the same one. */
  readonly making = new Map<string, Promise<CachedImage>>();
  /** Upstream fetches under way, by url: two sizes of one image missing at once fetch it once. */
  readonly fetching = new Map<string, Promise<Uint8Array>>();
  /** Recently failed urls: the failure, until when it is answered without asking the upstream. */
  readonly failures = new Map<string, { error: ImageUnavailableError; until: number }>();
  /** Upstream requests made (for tests and the benchmark). */
  upstreamFetches = 0;
  constructor(recentMaxBytes = RECENT_IMAGES_MAX_BYTES) {
    this.recent = new RecentImages(recentMaxBytes);
  }
}

const processState = new ImageCacheState();

export type ImageCacheDeps = {
  config: Pick<Config, 'BLOB_DIR' | 'STEAM_IMAGE_URL' | 'ITEM_ASSETS_URL' | 'IMAGE_MAX_BYTES' | 'IMAGE_FETCH_TIMEOUT_MS' | 'WEBHOOK_ALLOW_PRIVATE_TARGETS'>;
  log: Logger;
  now?: () => Date;
  /** The blob store's root (default config.BLOB_DIR). */
  blobDir?: string;
  /** The in-process caches (default: this process's own). */
  state?: ImageCacheState;
  /** Name resolution (tests); default the system resolver. */
  lookup?: Lookup;
};

/**
 * The image at `url`, fitted into `size`×`size` (rounded up to a power of two) as `format`: from
 * memory, else the blob store, else fetched, resized and stored. Throws ImageUnavailableError when
 * the upstream fails (nothing stored), InvalidImageRequestError for a size or format out of range.
 */
export async function cachedImage(deps: ImageCacheDeps, request: ImageRequest): Promise<CachedImage> {
  if (!IMAGE_FORMATS.includes(request.format)) throw new InvalidImageRequestError(`image format must be one of ${IMAGE_FORMATS.join(', ')}`);
  const size = roundImageSize(request.size);
  const state = deps.state ?? processState;
  const root = deps.blobDir ?? deps.config.BLOB_DIR;
  const key = imageBlobKey(request.url, size, request.format);
  const memoryKey = `${root}\n${key}`;
  const recent = state.recent.get(memoryKey);
  if (recent) return recent;
  const making = state.making.get(memoryKey);
  if (making) return making;
  const made = (async () => {
    const stored = await readStored(root, key, request.format);
    const image = stored ?? (await makeImage(deps, state, root, key, { url: request.url, size, format: request.format }));
    state.recent.set(memoryKey, image);
    return image;
  })().finally(() => state.making.delete(memoryKey));
  state.making.set(memoryKey, made);
  return made;
}

async function readStored(root: string, key: string, format: ImageFormat): Promise<CachedImage | null> {
  let bytes: Uint8Array;
  try {
    bytes = await readFile(blobPath(root, key));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  return { bytes, etag: imageEtag(bytes), contentType: IMAGE_CONTENT_TYPES[format] };
}

async function makeImage(deps: ImageCacheDeps, state: ImageCacheState, root: string, key: string, request: ImageRequest): Promise<CachedImage> {
  const now = (deps.now ?? (() => new Date()))().getTime();
  // Per blob root as well as url: one process has one root, and tests with roots of their own share nothing.
  const upstreamKey = `${root}\n${request.url}`;
  const failed = state.failures.get(upstreamKey);
  if (failed && failed.until > now) {
    throw new ImageUnavailableError(failed.error.reason, failed.error.message, Math.max(1, Math.ceil((failed.until - now) / 1000)));
  }
  let bytes: Uint8Array;
  try {
    let fetching = state.fetching.get(upstreamKey);
    if (!fetching) {
      fetching = fetchUpstream(deps, state, request.url).finally(() => state.fetching.delete(upstreamKey));
      state.fetching.set(upstreamKey, fetching);
    }
    const original = await fetching;
    bytes = await resize(original, request.size, request.format);
  } catch (error) {
    if (!(error instanceof ImageUnavailableError)) throw error;
    if (state.failures.size > 10_000) state.failures.clear();
    state.failures.set(upstreamKey, { error, until: now + FAILURE_TTL_MS });
    deps.log.warn({ url: request.url, reason: error.reason, err: error.message }, 'item image unavailable');
    throw error;
  }
  state.failures.delete(upstreamKey);
  // A temp name of this write's own, fsynced and renamed: two processes making one key never mix bytes.
  await writeBlobBytes(root, key, bytes, { tempTag: randomUUID() });
  return { bytes, etag: imageEtag(bytes), contentType: IMAGE_CONTENT_TYPES[request.format] };
}

/** The origins an operator configured for images (docs/design.md §18: STEAM_IMAGE_URL, ITEM_ASSETS_URL). */
function configuredOrigins(config: ImageCacheDeps['config']): Set<string> {
  const origins = new Set<string>();
  for (const raw of [config.STEAM_IMAGE_URL, config.ITEM_ASSETS_URL]) {
    try {
      origins.add(new URL(raw).origin);
    } catch {
      // The config schema checks both are URLs; nothing to add otherwise.
    }
  }
  return origins;
}

/** A host the operator spelled as a non-public address (an IP literal in a refused range, or localhost). */
function isExplicitlyPrivateHost(url: URL): boolean {
  const host = hostOf(url);
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  return isIP(host) !== 0 && refusalReason(host) !== null;
}

/**
 * Where the url may be fetched from, as webhooks judge targets (docs/design.md §8), with one allowance
 * (docs/decisions.md "Item images"): an origin exactly STEAM_IMAGE_URL's or ITEM_ASSETS_URL's may be
 * http, and when the operator wrote that origin as a loopback or private address (the local image
 * fake) that address is accepted. A configured name is still judged by what it resolves to, and
 * every other origin only by the webhook rules (WEBHOOK_ALLOW_PRIVATE_TARGETS lifts them).
 */
async function checkedTarget(deps: ImageCacheDeps, raw: string, timeoutMs: number) {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ImageUnavailableError('refused', 'the image url is not an absolute URL');
  }
  const configured = configuredOrigins(deps.config).has(parsed.origin);
  const allowPrivate = deps.config.WEBHOOK_ALLOW_PRIVATE_TARGETS || (configured && isExplicitlyPrivateHost(parsed));
  try {
    const url = parseWebhookUrl(raw, { allowPrivate: allowPrivate || configured });
    const address = await resolveTarget(url, { allowPrivate, lookup: deps.lookup, resolveTimeoutMs: timeoutMs });
    return { url, address };
  } catch (error) {
    if (error instanceof TargetRefusedError) {
      throw new ImageUnavailableError('refused', error.message.replace('webhooks are delivered to', 'images are fetched from'));
    }
    throw error;
  }
}

/** One GET of the upstream image: no redirects, the whole exchange within the timeout, the body within the cap. */
async function fetchUpstream(deps: ImageCacheDeps, state: ImageCacheState, raw: string): Promise<Uint8Array> {
  const timeoutMs = deps.config.IMAGE_FETCH_TIMEOUT_MS;
  const maxBytes = deps.config.IMAGE_MAX_BYTES;
  const started = performance.now();
  const { url, address } = await checkedTarget(deps, raw, timeoutMs);
  const remaining = Math.max(1, timeoutMs - (performance.now() - started));
  const signal = AbortSignal.timeout(remaining);
  const host = hostOf(url);
  state.upstreamFetches += 1;
  let response: Response;
  try {
    response = await fetch(pinnedUrl(url, address), {
      headers: { host: url.host, accept: 'image/png, image/webp, image/*;q=0.8', 'user-agent': 'cs2-platform-images/1' },
      redirect: 'manual',
      signal,
      ...(url.protocol === 'https:' ? { tls: isIP(host) ? {} : { serverName: host } } : {}),
    });
  } catch (error) {
    throw fetchFailure(error, timeoutMs);
  }
  if (response.status >= 300 && response.status < 400) {
    await response.body?.cancel().catch(() => undefined);
    throw new ImageUnavailableError('redirect', `the image upstream answered ${response.status} (redirects are not followed)`);
  }
  if (response.status !== 200) {
    await response.body?.cancel().catch(() => undefined);
    throw new ImageUnavailableError('upstream_status', `the image upstream answered ${response.status}`);
  }
  const declared = Number(response.headers.get('content-length') ?? Number.NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => undefined);
    throw new ImageUnavailableError('too_large', `the image is ${declared} bytes, more than IMAGE_MAX_BYTES (${maxBytes})`);
  }
  return readCapped(response, maxBytes, timeoutMs);
}

/** The body, read until it ends or passes `maxBytes` (then reading stops and the connection is dropped). */
async function readCapped(response: Response, maxBytes: number, timeoutMs: number): Promise<Uint8Array> {
  if (!response.body) return new Uint8Array(0);
  const reader = response.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > maxBytes) {
        await reader.cancel().catch(() => undefined);
        throw new ImageUnavailableError('too_large', `the image is larger than IMAGE_MAX_BYTES (${maxBytes})`);
      }
      chunks.push(value);
    }
  } catch (error) {
    if (error instanceof ImageUnavailableError) throw error;
    throw fetchFailure(error, timeoutMs);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}

function fetchFailure(error: unknown, timeoutMs: number): ImageUnavailableError {
  const { name, code } = error as { name?: string; code?: string };
  if (name === 'TimeoutError' || name === 'AbortError') return new ImageUnavailableError('timeout', `the image upstream did not answer within ${timeoutMs} ms`);
  const detail = typeof code === 'string' && /^[A-Z0-9_]{2,60}$/.test(code) ? ` (${code})` : '';
  return new ImageUnavailableError('connection', `the image upstream could not be reached${detail}`);
}

/**
 * Fits the image into size×size keeping its aspect, on a transparent background, sRGB. sharp decodes
 * it first: bytes it cannot decode, or a format outside ACCEPTED_INPUT_FORMATS, are not an image.
 */
async function resize(original: Uint8Array, size: number, format: ImageFormat): Promise<Uint8Array> {
  // Loaded at the first miss: sharp and libvips are ~18 MB of RSS a process serving only hits never needs.
  const { default: sharp } = await import('sharp');
  const input = () => sharp(original, { limitInputPixels: MAX_INPUT_PIXELS, failOn: 'error', animated: false });
  let inputFormat: string | undefined;
  try {
    inputFormat = (await input().metadata()).format;
  } catch {
    throw new ImageUnavailableError('not_an_image', 'the upstream body is not an image');
  }
  if (!inputFormat || !ACCEPTED_INPUT_FORMATS.has(inputFormat)) {
    throw new ImageUnavailableError('not_an_image', `the upstream body is ${inputFormat ?? 'not an image'}, not a raster image`);
  }
  try {
    const image = input()
      .ensureAlpha()
      .resize(size, size, { fit: 'contain', background: { r: 0, g: 0, b: 0, alpha: 0 } })
      .toColourspace('srgb');
    const encoded = format === 'png' ? image.png({ compressionLevel: 6 }) : image.webp({ quality: 90, alphaQuality: 100 });
    return new Uint8Array(await encoded.toBuffer());
  } catch (error) {
    // A body whose header decodes but whose pixels do not (truncated, corrupt, over the pixel limit).
    throw new ImageUnavailableError('not_an_image', `the upstream image could not be decoded (${(error as Error).message.slice(0, 120)})`);
  }
}
