import { brotliCompressSync, constants as zlibConstants } from 'node:zlib';
import type { SourceName } from '../platform/source-names.ts';
import type { Conversion } from '../prices/currency.ts';
import {
  ensureInventorySnapshot,
  findSnapshot,
  type InventoryDeps,
  type InventorySnapshot,
  isFreshSnapshot,
  type RenderedInventoryPage,
  renderInventoryPage,
} from './inventory/snapshots.ts';

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
    body =
      coding === 'br'
        ? brotliCompressSync(plain, { params: { [zlibConstants.BROTLI_PARAM_QUALITY]: 5 } })
        : Bun.gzipSync(plain as Uint8Array<ArrayBuffer>, { level: 6 });
    page.encoded.set(key, body);
  }
  return body;
}

/** What selects one rendered page besides its snapshot; `nextCursor` signs the cursor to the next page. */
export type InventoryPageRequest = {
  afterPosition: number;
  limit: number;
  valuation: SourceName | undefined;
  /** The valuation's currency and rates (null: USD). */
  conversion: Conversion | null;
  nextCursor: (lastPosition: number) => string;
};

type PageEntry = { value: Promise<RenderedInventoryPage>; expiresAt: number; valued: boolean; bytes: number };

/**
 * What GET /v2/inventories reads, through a per-process cache (PRICE_CACHE_MS; at 0 it keeps
 * nothing and every read goes to Postgres, or Steam): built once in api/deps.ts.
 * - `latest`: the latest snapshot of an inventory for a reading workspace (ensureInventorySnapshot:
 *   its own owner-token read, or the public read every workspace shares), the one last seen held
 *   for `ttlMs` per SteamID and workspace, replaced at once when this process stores a newer one of
 *   that scope. A token set or removed in another process is seen within `ttlMs`. Another process's newer
 *   snapshot (a `refresh=true` served elsewhere) is seen within `ttlMs`; a held snapshot older than
 *   INVENTORY_TTL_SECONDS is never trusted (Postgres is asked);
 * - `pinned`: a snapshot by id (cursors pin them; a snapshot never changes once stored);
 * - `page`: rendered pages keyed by (snapshot, position, limit, valuation, currency). A snapshot's
 *   assets never change, so a page without valuation lives until evicted; a valued page lives
 *   `ttlMs` and is dropped on every new price snapshot (clear()). Bounded by count and bytes, least
 *   recently used first out. Loads in flight are shared, so a burst of misses on one page renders it once.
 */
export class InventoryReader {
  /** Keyed by SteamID and the reading workspace: the snapshot that workspace was last served (its own owner read, or the public one). */
  private readonly latestByReader = new Map<string, { snapshot: InventorySnapshot; expiresAt: number }>();
  /** The newest public snapshot per SteamID this process has seen: a reader served the public read gets a newer one at once. */
  private readonly latestPublic = new Map<string, InventorySnapshot>();
  private readonly snapshotsById = new Map<string, InventorySnapshot>();
  private readonly pages = new Map<string, PageEntry>();
  private pageBytes = 0;

  constructor(
    private readonly deps: InventoryDeps,
    private readonly ttlMs: number,
    private readonly limits = { maxPages: 10_000, maxPageBytes: 64 * 1024 * 1024, maxInventories: 50_000 },
    private readonly clock: () => number = Date.now,
  ) {}

  private get enabled(): boolean {
    return this.ttlMs > 0;
  }

  /**
   * The latest snapshot no older than `maxAgeSeconds`, or a new one from Steam (ensureInventorySnapshot:
   * `stale` when Steam fails and an older one is served). A held snapshot serves only while fresh:
   * an old one is checked against Postgres before Steam is called.
   */
  async latest(
    steamId64: string,
    options: { maxAgeSeconds: number; refresh?: boolean; workspaceId?: string | null },
  ): Promise<{ snapshot: InventorySnapshot; stale: boolean }> {
    const key = `${steamId64}\u0000${options.workspaceId ?? ''}`;
    const held = this.enabled && !options.refresh ? this.latestByReader.get(key) : undefined;
    if (held && held.expiresAt > this.clock()) {
      const newerPublic = held.snapshot.workspace_id === null ? this.latestPublic.get(steamId64) : undefined;
      const snapshot = newerPublic && compareSnapshots(newerPublic, held.snapshot) > 0 ? newerPublic : held.snapshot;
      if (isFreshSnapshot(snapshot, this.deps.now(), options.maxAgeSeconds)) return { snapshot, stale: false };
    }
    const found = await ensureInventorySnapshot(this.deps, steamId64, options);
    this.rememberLatest(key, found.snapshot);
    return found;
  }

  /** The snapshot a cursor pinned; null when there is none with this id. */
  async pinned(id: string): Promise<InventorySnapshot | null> {
    const held = this.enabled ? this.snapshotsById.get(id) : undefined;
    if (held) return held;
    const loaded = await findSnapshot(this.deps.sql, id);
    if (loaded) this.rememberSnapshot(loaded);
    return loaded;
  }

  /** One rendered page of `snapshot` (renderInventoryPage), rendered when absent or (valued and) expired. */
  page(snapshot: InventorySnapshot, request: InventoryPageRequest): Promise<RenderedInventoryPage> {
    const render = () => renderInventoryPage(this.deps.sql, snapshot, { ...request, images: this.deps.config });
    if (!this.enabled) return render();
    const { conversion } = request;
    const currency = conversion ? `${conversion.currency}@${conversion.fx.as_of}:${conversion.fx.rate}` : 'USD';
    const id = `${snapshot.id}\u0000${request.afterPosition}\u0000${request.limit}\u0000${request.valuation ?? ''}\u0000${currency}`;
    const held = this.pages.get(id);
    if (held && held.expiresAt > this.clock()) {
      // Least recently used first out: a hit moves the page to the young end.
      this.pages.delete(id);
      this.pages.set(id, held);
      return held.value;
    }
    if (held) this.dropPage(id, held);
    const valued = request.valuation !== undefined;
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

  /**
   * Records a snapshot read or stored as the latest for a reader; an older one read concurrently
   * never replaces a newer one of the same scope (a reader whose token was dropped moves to the public one).
   */
  private rememberLatest(key: string, snapshot: InventorySnapshot): void {
    if (!this.enabled) return;
    const held = this.latestByReader.get(key);
    const expired = !held || held.expiresAt <= this.clock() || held.snapshot.workspace_id !== snapshot.workspace_id;
    if (!expired && compareSnapshots(held.snapshot, snapshot) > 0) return;
    if (!held && this.latestByReader.size >= this.limits.maxInventories) this.latestByReader.clear();
    this.latestByReader.set(key, { snapshot, expiresAt: this.clock() + this.ttlMs });
    if (snapshot.workspace_id === null) {
      const known = this.latestPublic.get(snapshot.steam_id);
      if (!known && this.latestPublic.size >= this.limits.maxInventories) this.latestPublic.clear();
      if (!known || compareSnapshots(snapshot, known) > 0) this.latestPublic.set(snapshot.steam_id, snapshot);
    }
    this.rememberSnapshot(snapshot);
  }

  private rememberSnapshot(snapshot: InventorySnapshot): void {
    if (!this.enabled) return;
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
