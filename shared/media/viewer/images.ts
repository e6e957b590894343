import { isCatalogId, isPriceVersion } from '../../catalog/identity.ts';
import type { Config } from '../../platform/config.ts';
import type { Queryable } from '../../platform/db.ts';
import type { Logger } from '../../platform/logger.ts';
import { cachedImage } from '../images/image-cache.ts';
import { charmImageUrl, itemImages, stickerImageUrl } from '../images/item-images.ts';
import { VIEWER_IMAGE_KINDS, VIEWER_IMAGES_PATH, type ViewerImageKind } from './contract.ts';

/**
 * The item card's images (docs/design.md §18) on the origin that serves the page: `/viewer/images/item/<catalog
 * id>?version=&wear=&size=` (the wear picks cs2-lib's wear variant where the item has no Steam icon), `/viewer/images/sticker/<sticker id>?size=` and `/viewer/images/charm/<charm
 * id>?size=`. Each resolves its upstream url the way the catalog does (shared/media/images/item-images.ts)
 * and answers the resized PNG from the image cache (shared/media/images/image-cache.ts: SSRF rules,
 * size cap, blob store), so the page never names, nor reaches, another origin. Served by the API
 * (viewer sessions) and by the render pool's private server alike.
 */
export type ViewerImageRequest = { kind: ViewerImageKind; id: string; version: string | null; wear?: number | null; size: number };
export type ViewerImageDeps = { sql: Queryable; config: Config; log: Logger };

const SIZES = new Set([64, 128, 256, 512, 1024]);
// Above the cache's own upstream timeout (IMAGE_FETCH_TIMEOUT_MS, 5 s by default), below the page's 12 s (card.ts).
const IMAGE_TIMEOUT_MS = 10_000;

export function viewerImagePath(request: ViewerImageRequest): string {
  const query = new URLSearchParams();
  if (request.version !== null) query.set('version', request.version);
  if (request.wear !== undefined && request.wear !== null) query.set('wear', String(request.wear));
  query.set('size', String(request.size));
  return `${VIEWER_IMAGES_PATH}/${request.kind}/${encodeURIComponent(request.id)}?${query}`;
}

/** The request a path names, or null for anything else (unknown kind, id not of its kind, size not a power of two from 64 to 1024). */
export function parseViewerImagePath(path: string, search: URLSearchParams): ViewerImageRequest | null {
  const match = new RegExp(`^${VIEWER_IMAGES_PATH}/([a-z]+)/([^/]+)$`).exec(path);
  if (!match) return null;
  const kind = match[1] as ViewerImageKind;
  const id = match[2]!;
  if (!(VIEWER_IMAGE_KINDS as readonly string[]).includes(kind)) return null;
  if (kind === 'item' ? !isCatalogId(id) : !/^(0|[1-9][0-9]{0,9})$/.test(id)) return null;
  const version = search.get('version');
  if (version !== null && (kind !== 'item' || !isPriceVersion(version))) return null;
  const wearText = search.get('wear');
  const wear = wearText === null ? null : Number(wearText);
  if (wear !== null && (kind !== 'item' || !/^[0-9.e-]{1,32}$/.test(wearText!) || !(wear >= 0 && wear <= 1))) return null;
  const size = Number(search.get('size'));
  if (!SIZES.has(size)) return null;
  return { kind, id, version, wear, size };
}

/** The upstream url of the image a request names, or null when that item, sticker or charm has none. */
export async function viewerImageUpstream(deps: Pick<ViewerImageDeps, 'sql' | 'config'>, request: ViewerImageRequest): Promise<string | null> {
  if (request.kind === 'sticker') return stickerImageUrl(deps.config, Number(request.id));
  if (request.kind === 'charm') return charmImageUrl(deps.config, Number(request.id));
  const [image] = await itemImages(deps.sql, deps.config, [{ catalog_id: request.id, version: request.version, wear: request.wear ?? null }]);
  return image?.url ?? null;
}

export class ViewerImageUnavailableError extends Error {}

/**
 * The image's bytes from the cache (fetched once, resized, stored), or null when it has no image.
 * Throws ViewerImageUnavailableError when the upstream failed and nothing is stored, or it took too long.
 */
export async function viewerImage(
  deps: ViewerImageDeps,
  request: ViewerImageRequest,
): Promise<{ bytes: Uint8Array; etag: string; contentType: string } | null> {
  const url = await viewerImageUpstream(deps, request);
  if (url === null) return null;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      cachedImage({ config: deps.config, log: deps.log }, { url, size: request.size, format: 'png' }),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the image took longer than ${IMAGE_TIMEOUT_MS} ms`)), IMAGE_TIMEOUT_MS);
      }),
    ]);
  } catch (error) {
    throw new ViewerImageUnavailableError(`the ${request.kind} image is unavailable: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    clearTimeout(timer);
  }
}

const notFound = () => new Response('Not found', { status: 404, headers: { 'content-type': 'text/plain; charset=utf-8' } });

/** `/viewer/images/…` as a Response: 200 PNG, 404 (bad path, or no image), 503 (upstream failed, nothing stored). */
export async function viewerImageResponse(deps: ViewerImageDeps, path: string, search: URLSearchParams): Promise<Response> {
  const request = parseViewerImagePath(path, search);
  if (!request) return notFound();
  try {
    const image = await viewerImage(deps, request);
    if (!image) return notFound();
    return new Response(image.bytes, {
      headers: { 'content-type': image.contentType, etag: image.etag, 'cache-control': 'public, max-age=86400', 'x-content-type-options': 'nosniff' },
    });
  } catch (error) {
    if (!(error instanceof ViewerImageUnavailableError)) throw error;
    return new Response('Image unavailable', { status: 503, headers: { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '30' } });
  }
}
