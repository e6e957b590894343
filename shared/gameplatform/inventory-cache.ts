import { brotliCompressSync, constants as zlibConstants } from 'node:zlib';
import type { InventorySnapshot } from './inventories.ts';

/**
 * One rendered page of GET /v2/inventories as the bytes sent: `fresh` is the body with
 * `"stale":false`, `staleAt` the byte offset of that `false`, so the `stale: true` variant (computed
 * per request from fetched_at) is spliced in without rendering or serialising the page again.
 */
export type RenderedInventoryPage = {
  fresh: Uint8Array;
  staleAt: number;
  staleBody?: Uint8Array;
  /** Compressed variants, made at their first request and kept with the page (`<stale>:<coding>`). */
  encoded?: Map<string, Uint8Array>;
};

const STALE_TRUE = Buffer.from('true');

/** The body of a rendered page with its `stale` flag (the stale variant is made once, then kept). */
export function inventoryPageBytes(page: RenderedInventoryPage, stale: boolean): Uint8Array {
  if (!stale) return page.fresh;
  page.staleBody ??= Buffer.concat([page.fresh.subarray(0, page.staleAt), STALE_TRUE, page.fresh.subarray(page.staleAt + 'false'.length)]);
  return page.staleBody;
}

/**
 * The page in a content coding, compressed once per cached page: a 50-asset page is ~37 KB of JSON
 * and ~4 KB compressed, and sending the plain bytes was half of the API's CPU per cached request.
 */
export function encodedInventoryPage(page: RenderedInventoryPage, stale: boolean, coding: 'br' | 'gzip' | 'identity'): Uint8Array {
  const plain = inventoryPageBytes(page, stale);
  if (coding === 'identity') return plain;
  page.encoded ??= new Map();
  const key = `${stale}:${coding}`;
  let body = page.encoded.get(key);
  if (!body) {
    // Quality 5 and level 6: most of the size win for a small share of the CPU of the maximum.
    body = coding === 'br' ? brotliCompressSync(plain, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 } }) : Bun.gzipSync(plain as Uint8Array<ArrayBuffer>, { level: 6 });
    page.encoded.set(key, body);
  }
  return body;
}

export type InventoryPageKey = {
  snapshotId: string;
  after: number;
  limit: number;
  valuation: string | undefined;
  /** The currency of the valuation and the rates it was converted with (`USD` when unconverted). */
  currency?: string;
};

type PageEntry = { value: Promise<RenderedInventoryPage>; expiresAt: number; valued: boolean; bytes: number };

/**
 * Per-process cache of what GET /v2/inventories serves again and again (PRICE_CACHE_MS; 0 turns it
 * off):
 * - the latest snapshot of each inventory, for `ttlMs`, replaced at once when this process stores a
 *   newer one. Another process's newer snapshot (a `refresh=true` served elsewhere) is seen within
 *   `ttlMs`; a held snapshot older than INVENTORY_TTL_SECONDS is never trusted (Postgres is asked);
 * - snapshots by id (cursors pin them; a snapshot never changes once stored);
 * - rendered pages keyed by (snapshot, position, limit, valuation). A snapshot's assets never change,
 *   so a page without valuation lives until evicted; a valued page lives `ttlMs` and is dropped on
 *   every new price snapshot (clear(), like the item price cache). Bounded by count and bytes,
 *   least recently used first out.
 * Loads in flight are shared, so a burst of misses on one page renders it once.
 */
export class InventoryCache {
  private readonly latestBySteamId = new Map<string, { snapshot: InventorySnapshot; expiresAt: number }>();
  private readonly snapshotsById = new Map<string, InventorySnapshot>();
  private readonly pages = new Map<string, PageEntry>();
  private pageBytes = 0;

  constructor(
    private readonly ttlMs: number,
    private readonly limits = { maxPages: 10_000, maxPageBytes: 64 * 1024 * 1024, maxInventories: 50_000 },
    private readonly clock: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  /** The latest snapshot of this inventory as last seen by this process, unless that was over `ttlMs` ago. */
  latest(steamId64: string): InventorySnapshot | undefined {
    if (!this.enabled) return undefined;
    const held = this.latestBySteamId.get(steamId64);
    return held && held.expiresAt > this.clock() ? held.snapshot : undefined;
  }

  /** Records a snapshot read or stored as the latest; an older one read concurrently never replaces a newer one. */
  rememberLatest(snapshot: InventorySnapshot): void {
    if (!this.enabled) return;
    const held = this.latestBySteamId.get(snapshot.steam_id);
    const expired = !held || held.expiresAt <= this.clock();
    if (!expired && compareSnapshots(held.snapshot, snapshot) > 0) return;
    if (!held && this.latestBySteamId.size >= this.limits.maxInventories) this.latestBySteamId.clear();
    this.latestBySteamId.set(snapshot.steam_id, { snapshot, expiresAt: this.clock() + this.ttlMs });
    this.rememberSnapshot(snapshot);
  }

  async snapshot(id: string, load: () => Promise<InventorySnapshot | null>): Promise<InventorySnapshot | null> {
    if (!this.enabled) return load();
    const held = this.snapshotsById.get(id);
    if (held) return held;
    const loaded = await load();
    if (loaded) this.rememberSnapshot(loaded);
    return loaded;
  }

  /** The rendered page of `key`, rendering it with `render` when absent or (valued and) expired. */
  page(key: InventoryPageKey, render: () => Promise<RenderedInventoryPage>): Promise<RenderedInventoryPage> {
    if (!this.enabled) return render();
    const id = `${key.snapshotId}\u0000${key.after}\u0000${key.limit}\u0000${key.valuation ?? ''}\u0000${key.currency ?? 'USD'}`;
    const held = this.pages.get(id);
    if (held && held.expiresAt > this.clock()) {
      // Least recently used first out: a hit moves the page to the young end.
      this.pages.delete(id);
      this.pages.set(id, held);
      return held.value;
    }
    if (held) this.dropPage(id, held);
    const valued = key.valuation !== undefined;
    const entry: PageEntry = { value: render(), expiresAt: Number.POSITIVE_INFINITY, valued, bytes: 0 };
    this.pages.set(id, entry);
    entry.value.then(
      (page) => {
        if (this.pages.get(id) !== entry) return;
        if (valued) entry.expiresAt = this.clock() + this.ttlMs;
        entry.bytes = page.fresh.byteLength;
        this.pageBytes += entry.bytes;
        this.evict();
      },
      () => {
        if (this.pages.get(id) === entry) this.pages.delete(id);
      },
    );
    return entry.value;
  }

  /** A new price snapshot: valued pages are dropped; snapshots and unvalued pages never change. */
  clear(): void {
    for (const [id, entry] of this.pages) if (entry.valued) this.dropPage(id, entry);
  }

  private rememberSnapshot(snapshot: InventorySnapshot): void {
    if (this.snapshotsById.size >= this.limits.maxInventories) this.snapshotsById.clear();
    this.snapshotsById.set(snapshot.id, snapshot);
  }

  private dropPage(id: string, entry: PageEntry): void {
    this.pages.delete(id);
    this.pageBytes -= entry.bytes;
  }

  private evict(): void {
    for (const [id, entry] of this.pages) {
      if (this.pages.size <= this.limits.maxPages && this.pageBytes <= this.limits.maxPageBytes) return;
      this.dropPage(id, entry);
    }
  }
}

/** The order of latestSnapshot's query: fetched_at, then id. */
function compareSnapshots(a: InventorySnapshot, b: InventorySnapshot): number {
  const byTime = a.fetched_at.getTime() - b.fetched_at.getTime();
  return byTime !== 0 ? byTime : a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
