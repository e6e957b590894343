import type { Sql } from '../db.ts';
import type { Logger } from '../logger.ts';
import {
  encodeBody,
  encodeSmallBody,
  filterPriceListBySource,
  itemPricesFromList,
  type EncodedBody,
  type PublicPriceItem,
  type PublicPriceList,
} from './public-document.ts';
import { findNewestPriceSnapshot, findNewestPriceSnapshotId, type PriceSnapshotRecord } from './repository.ts';

/** How often an API process asks Postgres whether a newer snapshot exists (at most; only while serving). */
export const SNAPSHOT_POLL_INTERVAL_MS = 2_000;
// Bodies derived in the API (per-source lists, single items) are compressed once per snapshot.
const DERIVED_BROTLI_QUALITY = 5;
// Per-item bodies are memoised per snapshot; a crawler walking every name resets the memo rather than growing it.
const ITEM_BODY_MEMO_LIMIT = 20_000;

/**
 * One stored snapshot held in memory: the full list in every encoding as stored, a map by
 * market_hash_name, and the bodies derived from it (per source, per item), each computed once.
 */
export class LoadedPriceSnapshot {
  readonly id: number;
  readonly createdAt: Date;
  readonly itemCount: number;
  readonly body: EncodedBody;
  /**
   * Each item as its JSON text, not as parsed objects: tens of thousands of small object graphs kept
   * for the snapshot's life made every garbage collection of the process slower.
   */
  private readonly byName: Map<string, string>;
  private readonly sourceBodies = new Map<string, Promise<EncodedBody>>();
  private readonly itemBodies = new Map<string, EncodedBody>();

  constructor(record: PriceSnapshotRecord) {
    this.id = record.id;
    this.createdAt = record.created_at;
    this.itemCount = record.item_count;
    this.body = { etag: record.etag, json: record.body, gzip: record.body_gzip, br: record.body_br };
    const list = JSON.parse(record.body.toString('utf8')) as PublicPriceList;
    this.byName = new Map(list.items.map((item) => [item.market_hash_name, JSON.stringify(item)]));
  }

  /** The list restricted to one source, derived and compressed at its first request, then reused. */
  sourceBody(source: string): Promise<EncodedBody> {
    let body = this.sourceBodies.get(source);
    if (!body) {
      const list = JSON.parse(this.body.json.toString('utf8')) as PublicPriceList;
      body = encodeBody(JSON.stringify(filterPriceListBySource(list, source)), { brotliQuality: DERIVED_BROTLI_QUALITY });
      // A failure is not memoised: the next request tries again.
      body.catch(() => this.sourceBodies.delete(source));
      this.sourceBodies.set(source, body);
    }
    return body;
  }

  /** Every stored version of one item, or null when the snapshot has no price for that name. */
  itemBody(marketHashName: string): EncodedBody | null {
    const memo = this.itemBodies.get(marketHashName);
    if (memo) return memo;
    const text = this.byName.get(marketHashName);
    if (!text) return null;
    const body = encodeSmallBody(JSON.stringify(itemPricesFromList(JSON.parse(text) as PublicPriceItem)), { brotliQuality: DERIVED_BROTLI_QUALITY });
    if (this.itemBodies.size >= ITEM_BODY_MEMO_LIMIT) this.itemBodies.clear();
    this.itemBodies.set(marketHashName, body);
    return body;
  }
}

/**
 * The newest price snapshot of this API process (DESIGN 9: keyless prices are served from memory,
 * never by a per-request query over all items). Loaded at first use; afterwards a request that finds
 * the last check older than the poll interval starts a background `select max(id)` and is served
 * the snapshot in hand. `notify()` (Redis pub/sub from the builder) checks at once.
 */
export class PriceSnapshotCache {
  private loaded: LoadedPriceSnapshot | null = null;
  private lastCheckAt = Number.NEGATIVE_INFINITY;
  private checking: Promise<void> | null = null;
  private recheck = false;
  private readonly pollIntervalMs: number;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    options: { pollIntervalMs?: number } = {},
  ) {
    this.pollIntervalMs = options.pollIntervalMs ?? SNAPSHOT_POLL_INTERVAL_MS;
  }

  /** The snapshot to serve, or null when none exists yet (or none could be loaded). */
  async current(): Promise<LoadedPriceSnapshot | null> {
    if (!this.loaded) {
      await this.refresh(false);
      return this.loaded;
    }
    void this.refresh(false);
    return this.loaded;
  }

  /** A newer snapshot was announced: check now (or right after a check in flight). */
  notify(): void {
    if (this.checking) this.recheck = true;
    else void this.refresh(true);
  }

  private refresh(force: boolean): Promise<void> {
    if (this.checking) return this.checking;
    const now = performance.now();
    if (!force && now - this.lastCheckAt < this.pollIntervalMs) return Promise.resolve();
    this.lastCheckAt = now;
    this.checking = this.loadIfNewer().finally(() => {
      this.checking = null;
      if (this.recheck) {
        this.recheck = false;
        void this.refresh(true);
      }
    });
    return this.checking;
  }

  private async loadIfNewer(): Promise<void> {
    try {
      const newestId = await findNewestPriceSnapshotId(this.sql);
      if (newestId === null || (this.loaded && newestId <= this.loaded.id)) return;
      const record = await findNewestPriceSnapshot(this.sql);
      if (!record || (this.loaded && record.id <= this.loaded.id)) return;
      this.loaded = new LoadedPriceSnapshot(record);
      this.log.debug({ snapshot_id: record.id, items: record.item_count }, 'price snapshot loaded');
    } catch (error) {
      // Keep serving the snapshot in hand; the next poll tries again.
      this.log.warn({ err: (error as Error).message }, 'could not check for a newer price snapshot');
    }
  }
}
