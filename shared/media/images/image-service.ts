import { findCatalogItem } from '../../catalog/repository.ts';
import type { Config } from '../../platform/config.ts';
import type { Sql } from '../../platform/db.ts';
import { type CachedImage, cachedImage, type ImageCacheDeps, type ImageFormat } from './image-cache.ts';
import { type ItemImage, itemImage } from './item-images.ts';

/**
 * GET /v2/images/{catalog_id} without HTTP (docs/design.md §18): which image a catalog item and version has,
 * and its resized bytes through the image cache, or a 302 target when IMAGE_PROXY is false.
 */

/** How long a process trusts what it resolved for an item and version: a newer Steam icon shows within this. */
export const IMAGE_RESOLVE_TTL_MS = 60_000;
const RESOLVED_MAX = 50_000;

export type ItemImageAnswer =
  | { kind: 'unknown_item' }
  | { kind: 'no_image' }
  | { kind: 'redirect'; url: string }
  | { kind: 'image'; image: CachedImage; source: ItemImage['source'] };

type Resolved = { image: ItemImage | null; known: boolean; until: number };

export type ItemImageServiceDeps = Omit<ImageCacheDeps, 'config'> & { config: Config; sql: Sql };

export class ItemImageService {
  private readonly resolved = new Map<string, Resolved>();
  private readonly resolving = new Map<string, Promise<Resolved>>();

  constructor(private readonly deps: ItemImageServiceDeps) {}

  /** Throws ImageUnavailableError when the upstream fails and nothing is stored. */
  async answer(request: { catalogId: string; version?: string; size: number; format: ImageFormat }): Promise<ItemImageAnswer> {
    const resolved = await this.resolve(request.catalogId, request.version);
    if (!resolved.known) return { kind: 'unknown_item' };
    if (!resolved.image) return { kind: 'no_image' };
    if (!this.deps.config.IMAGE_PROXY) return { kind: 'redirect', url: resolved.image.url };
    const image = await cachedImage(this.deps, { url: resolved.image.url, size: request.size, format: request.format });
    return { kind: 'image', image, source: resolved.image.source };
  }

  private async resolve(catalogId: string, version: string | undefined): Promise<Resolved> {
    const key = `${catalogId}\n${version ?? ''}`;
    const now = this.now();
    const cached = this.resolved.get(key);
    if (cached && cached.until > now) return cached;
    let pending = this.resolving.get(key);
    if (!pending) {
      pending = this.lookUp(catalogId, version).finally(() => this.resolving.delete(key));
      this.resolving.set(key, pending);
    }
    return pending;
  }

  private async lookUp(catalogId: string, version: string | undefined): Promise<Resolved> {
    const image = await itemImage(this.deps.sql, this.deps.config, catalogId, version);
    // No image: tell an unknown id (404 not_found) from an item without one (404 image_not_found).
    const known = image !== null || (await findCatalogItem(this.deps.sql, catalogId)) !== null;
    const resolved = { image, known, until: this.now() + IMAGE_RESOLVE_TTL_MS };
    if (this.resolved.size >= RESOLVED_MAX) this.resolved.clear();
    this.resolved.set(`${catalogId}\n${version ?? ''}`, resolved);
    return resolved;
  }

  private now(): number {
    return (this.deps.now ?? (() => new Date()))().getTime();
  }
}
