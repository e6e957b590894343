import { z } from 'zod';
import { errors } from '../http/errors.ts';
import type { Queryable } from '../platform/db.ts';
import { windowStart } from '../util/time.ts';
import { findCatalogItemById, type Granularity, type HistoryPosition, listHistoryPoints } from './repository.ts';
import type { PriceRunWatch } from './run-watch.ts';

/** docs/design.md §9: history granularities, stored as price_rollups.granularity. */
export const GRANULARITIES = ['10m', 'hourly', 'daily'] as const satisfies readonly Granularity[];
export const DEFAULT_GRANULARITY: Granularity = 'hourly';

export const HISTORY_LIMIT_MAX = 1000;
/** 48 h of 10-minute buckets. */
export const HISTORY_LIMIT_DEFAULT = 288;

const DAY_MS = 86_400_000;
/** Widest from..to per request. */
export const HISTORY_MAX_RANGE_DAYS: Record<Granularity, number> = { '10m': 31, hourly: 366, daily: 3660 };
/** The window when `from` is omitted: it ends at `to` (default now) and is this long. */
export const HISTORY_DEFAULT_RANGE_DAYS: Record<Granularity, number> = { '10m': 2, hourly: 30, daily: 365 };

export type HistoryWindow = { from: Date; to: Date };

/**
 * A time window: `from` inclusive, `to` exclusive (docs/interface.md §8's convention). Omitted `to` is now;
 * omitted `from` is `defaultDays` before `to`. from < to and to − from ≤ `maxDays`, else 400 naming
 * the field; `granularity`, when given, is named in the message. Price and index history share it.
 */
export function resolveWindow(
  from: Date | undefined,
  to: Date | undefined,
  now: Date,
  limits: { defaultDays: number; maxDays: number; granularity?: string },
): HistoryWindow {
  const end = to ?? now;
  const start = from ?? new Date(end.getTime() - limits.defaultDays * DAY_MS);
  if (start >= end) {
    throw errors.invalidRequest('`from` must be before `to` (to defaults to now).', [{ field: 'query.from', message: 'must be before to' }]);
  }
  const { maxDays, granularity } = limits;
  if (end.getTime() - start.getTime() > maxDays * DAY_MS) {
    throw errors.invalidRequest(`The range from..to may span at most ${maxDays} days${granularity ? ` at granularity ${granularity}` : ''}.`, [
      { field: 'query.to', message: `range exceeds ${maxDays} days${granularity ? ` for granularity ${granularity}` : ''}` },
    ]);
  }
  return { from: start, to: end };
}

/**
 * The window of a price history request at `granularity` (its default and widest range). Buckets
 * are kept for their granularity's horizon (`horizonDays`, RETENTION_ROLLUPS_*_DAYS, issue 13): a
 * window starting before it is a 400 naming `from`, rather than a page that looks like no prices.
 */
export function resolveHistoryWindow(granularity: Granularity, from: Date | undefined, to: Date | undefined, now: Date, horizonDays: number): HistoryWindow {
  const window = resolveWindow(from, to, now, {
    defaultDays: HISTORY_DEFAULT_RANGE_DAYS[granularity],
    maxDays: HISTORY_MAX_RANGE_DAYS[granularity],
    granularity,
  });
  const kept = windowStart(now, horizonDays);
  if (window.from < kept) {
    throw errors.invalidRequest(
      `${granularity} buckets are kept for ${horizonDays} days: \`from\` (or \`to\` minus the default range) may not be before ${kept.toISOString()}; use a coarser granularity for older history.`,
      [{ field: 'query.from', message: `before the ${horizonDays}-day horizon of ${granularity} history` }],
    );
  }
  return window;
}

export const historySeriesSchema = z.object({
  version: z.string(),
  points: z.array(
    z.object({
      bucket_start: z.string(),
      // Decimal strings, as stored.
      open: z.string(),
      high: z.string(),
      low: z.string(),
      close: z.string(),
      samples: z.number().int().describe('Prices observed in the bucket'),
    }),
  ),
});
export type HistorySeries = z.infer<typeof historySeriesSchema>;

/**
 * One page, serialised but for its cursor (which binds the caller's workspace and filters): the
 * item, and the page's `data` (series in version order, a series cut by the limit continuing at the
 * top of the next page) as JSON text.
 */
export type HistoryPageBody = {
  catalogId: string;
  marketHashName: string;
  dataJson: string;
  next: HistoryPosition | null;
};

export type HistoryPageInput = { catalogId: string; marketplace: string; granularity: Granularity; version: string | null; window: HistoryWindow };

/** One page of an item's history from the rollups; null when the catalog id is unknown. */
export async function itemHistoryPage(db: Queryable, input: HistoryPageInput, after: HistoryPosition | null, limit: number): Promise<HistoryPageBody | null> {
  // Together: the item lookup and the page are independent reads (an unknown item has no rollups).
  const [item, page] = await Promise.all([
    findCatalogItemById(db, input.catalogId),
    listHistoryPoints(
      db,
      {
        catalogId: input.catalogId,
        source: input.marketplace,
        granularity: input.granularity,
        version: input.version,
        from: input.window.from,
        to: input.window.to,
      },
      after,
      limit,
    ),
  ]);
  if (!item) return null;
  const data: HistorySeries[] = [];
  let current: HistorySeries | undefined;
  for (const point of page.points) {
    if (current?.version !== point.version) {
      current = { version: point.version, points: [] };
      data.push(current);
    }
    current.points.push({ bucket_start: point.bucket_start, open: point.open, high: point.high, low: point.low, close: point.close, samples: point.samples });
  }
  return { catalogId: item.catalog_id, marketHashName: item.market_hash_name, dataJson: JSON.stringify(data), next: page.next };
}

/** The response body of GET /v2/prices/{catalog_id}/history (fields in the documented order). */
export function historyPageJson(page: HistoryPageBody, input: HistoryPageInput, nextCursor: string | null): string {
  const text = JSON.stringify;
  return (
    `{"catalog_id":${text(page.catalogId)},"market_hash_name":${text(page.marketHashName)},"marketplace":${text(input.marketplace)},` +
    `"granularity":${text(input.granularity)},"from":${text(input.window.from.toISOString())},"to":${text(input.window.to.toISOString())},` +
    `"data":${page.dataJson},"next_cursor":${text(nextCursor)}}`
  );
}

/** Cached pages older than this are read again even without a new run (retention deletes old buckets without one). */
export const HISTORY_PAGE_MAX_AGE_MS = 60_000;
/** Characters of cached `data` JSON per process (about as many bytes: the text is ASCII but for names). */
const HISTORY_CACHE_MAX_CHARS = 32 * 1024 * 1024;

type CachedPage = { generation: number; loadedAt: number; chars: number; page: Promise<HistoryPageBody | null> };

/**
 * GET /v2/prices/{id}/history pages (itemHistoryPage), read through a per-process cache kept until
 * the next ingest run is seen (PriceRunWatch, as item prices) and for at most
 * HISTORY_PAGE_MAX_AGE_MS. Without a run watch (PRICE_CACHE_MS 0) it keeps nothing and every read
 * goes to Postgres. Built once in api/deps.ts. A page is keyed by everything that selects its
 * points (item, marketplace, granularity, version, the resolved window to the millisecond, the
 * position it starts after, the limit); the cursor to the next page is encoded per request, for
 * the caller's workspace. Pages of a default window ending "now" differ by the millisecond and so
 * rarely repeat; explicit windows and every page reached by a cursor do. Unknown items are not
 * kept; at most HISTORY_CACHE_MAX_CHARS of pages, oldest out first.
 */
export class HistoryPageReader {
  private readonly entries = new Map<string, CachedPage>();
  private chars = 0;

  constructor(
    private readonly db: Queryable,
    private readonly runs: PriceRunWatch | null,
  ) {}

  /** The page, null when the catalog id is unknown. */
  async read(input: HistoryPageInput, after: HistoryPosition | null, limit: number): Promise<HistoryPageBody | null> {
    const load = () => itemHistoryPage(this.db, input, after, limit);
    if (!this.runs) return load();
    const generationOrCheck = this.runs.generation();
    const generation = typeof generationOrCheck === 'number' ? generationOrCheck : await generationOrCheck;
    const key = [
      input.catalogId,
      input.marketplace,
      input.granularity,
      input.version ?? '',
      input.window.from.toISOString(),
      input.window.to.toISOString(),
      after?.version ?? '',
      after?.bucket_start ?? '',
      limit,
    ].join('\u0000');
    const now = performance.now();
    const cached = this.entries.get(key);
    if (cached && cached.generation === generation && now - cached.loadedAt < HISTORY_PAGE_MAX_AGE_MS) return cached.page;
    if (cached) this.forget(key, cached);
    const entry: CachedPage = { generation, loadedAt: now, chars: 0, page: load() };
    this.entries.set(key, entry);
    entry.page.then(
      (page) => {
        if (this.entries.get(key) !== entry) return;
        // An unknown item is looked up again next time.
        if (!page) return this.forget(key, entry);
        entry.chars = page.dataJson.length;
        this.chars += entry.chars;
        for (const [oldestKey, oldest] of this.entries) {
          if (this.chars <= HISTORY_CACHE_MAX_CHARS) break;
          this.forget(oldestKey, oldest);
        }
      },
      // A failed read is tried again by the next request.
      () => this.forget(key, entry),
    );
    return entry.page;
  }

  private forget(key: string, entry: CachedPage): void {
    if (this.entries.get(key) !== entry) return;
    this.entries.delete(key);
    this.chars -= entry.chars;
  }
}
