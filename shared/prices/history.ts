import { z } from 'zod';
import type { Queryable } from '../db.ts';
import { errors } from '../errors.ts';
import { findCatalogItemById, listHistoryPoints, type Granularity, type HistoryPosition } from './repository.ts';

/** DESIGN 9: history granularities, stored as price_rollups.granularity. */
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
 * A time window: `from` inclusive, `to` exclusive (spec 8's convention). Omitted `to` is now;
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

/** The window of a price history request at `granularity` (its default and widest range). */
export function resolveHistoryWindow(granularity: Granularity, from: Date | undefined, to: Date | undefined, now: Date): HistoryWindow {
  return resolveWindow(from, to, now, { defaultDays: HISTORY_DEFAULT_RANGE_DAYS[granularity], maxDays: HISTORY_MAX_RANGE_DAYS[granularity], granularity });
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

export type HistoryPage = {
  catalog_id: string;
  market_hash_name: string;
  marketplace: string;
  granularity: Granularity;
  from: string;
  to: string;
  /** Series in version order; a series cut by the page limit continues at the top of the next page. */
  data: HistorySeries[];
  next: HistoryPosition | null;
};

/** One page of an item's history from the rollups; null when the catalog id is unknown. */
export async function itemHistoryPage(
  db: Queryable,
  input: { catalogId: string; marketplace: string; granularity: Granularity; version: string | null; window: HistoryWindow },
  after: HistoryPosition | null,
  limit: number,
): Promise<HistoryPage | null> {
  const item = await findCatalogItemById(db, input.catalogId);
  if (!item) return null;
  const page = await listHistoryPoints(
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
  );
  const data: HistorySeries[] = [];
  for (const { version, ...point } of page.points) {
    const current = data[data.length - 1];
    if (current && current.version === version) current.points.push(point);
    else data.push({ version, points: [point] });
  }
  return {
    catalog_id: item.catalog_id,
    market_hash_name: item.market_hash_name,
    marketplace: input.marketplace,
    granularity: input.granularity,
    from: input.window.from.toISOString(),
    to: input.window.to.toISOString(),
    data,
    next: page.next,
  };
}
