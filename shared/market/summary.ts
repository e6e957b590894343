import { z } from 'zod';
import type { Queryable } from '../platform/db.ts';
import { SOURCE_NAMES, type SourceName } from '../platform/source-names.ts';
import { fxSchema } from '../prices/currency.ts';
import { freshPriceSql } from '../prices/freshness.ts';
import { SEGMENTS, type SegmentFilter } from './segments.ts';

/**
 * GET /v2/market/summary: point-in-time USD totals over the latest price of every (item, version,
 * marketplace), computed in Postgres `numeric` (money never passes through a JS number).
 */
export type MarketSummaryQuery = {
  /** One marketplace, or null for every known one (SOURCE_NAMES). */
  marketplace: SourceName | null;
  segment: SegmentFilter;
  /** Count only prices that are fresh as of `now` (same rule as GET /v2/prices/{catalog_id}). */
  freshOnly: boolean;
};

// Sums are decimal strings computed in Postgres `numeric`.
const marketplaceSummarySchema = z.object({
  marketplace: z.enum(SOURCE_NAMES),
  items_priced: z.number().int().describe('Distinct (catalog_id, version) this marketplace prices'),
  lowest_price_sum: z.string().describe('Sum of this marketplace’s prices (its own lowest ask per item and version)'),
  listed_value_sum: z.string().describe('Sum of price × quantity over its prices with a quantity'),
  listings: z.number().int().describe('Sum of quantity'),
  items_with_quantity: z.number().int().describe('Prices with a quantity'),
  oldest_source_time: z.string().nullable(),
  newest_source_time: z.string().nullable(),
});

/** GET /v2/market/summary. */
export const marketSummarySchema = z.object({
  as_of: z.string(),
  currency: z.string().describe('USD, or the `?currency=` asked for'),
  fx: fxSchema.optional(),
  marketplace: z.enum(SOURCE_NAMES).nullable().describe('The marketplace filter; null for every marketplace'),
  segment: z.enum(SEGMENTS).nullable().describe('The segment filter; null for the whole market'),
  value: z.string().nullable(),
  fresh_only: z.boolean(),
  totals: z.object({
    items_priced: z.number().int().describe('Distinct (catalog_id, version) priced by any included marketplace'),
    lowest_price_sum: z.string().describe('Sum over those (item, version) of the lowest price across the included marketplaces'),
    listed_value_sum: z.string(),
    listings: z.number().int(),
  }),
  marketplaces: z.array(marketplaceSummarySchema),
});

export type MarketplaceSummary = z.infer<typeof marketplaceSummarySchema>;
export type MarketSummary = z.infer<typeof marketSummarySchema>;

type SummaryRow = {
  marketplace: SourceName;
  items_priced: number;
  lowest_price_sum: string;
  listed_value_sum: string;
  listings: string | bigint;
  items_with_quantity: number;
  oldest_source_time: Date | null;
  newest_source_time: Date | null;
  total_items_priced: number;
  total_lowest_price_sum: string;
  total_listed_value_sum: string;
  total_listings: string | bigint;
};

/** Catalog columns of each segment (a fixed map: the segment never reaches SQL as text). */
const SEGMENT_COLUMNS = { type: 'type', weapon: 'weapon', rarity: 'rarity', exterior: 'exterior' } as const;

/**
 * The summary as of `now`, in one set-based query: the included latest prices (marketplace, segment
 * and freshness filters) are grouped per marketplace and per (item, version) for the totals; each
 * included marketplace gets a row, with zeros when it has no prices.
 */
export async function computeMarketSummary(db: Queryable, query: MarketSummaryQuery, now: Date): Promise<MarketSummary> {
  const sources: string[] = query.marketplace ? [query.marketplace] : [...SOURCE_NAMES];
  const segment = query.segment;
  // Fresh by the one rule of GET /health and GET /v2/prices/{catalog_id} (shared/prices/freshness.ts).
  const rows = await db<SummaryRow[]>`
    with included as (
      select p.catalog_id, p.version, p.source, p.price, p.quantity, p.source_time
      from current_prices p
      ${segment ? db`join catalog_items c on c.catalog_id = p.catalog_id` : db``}
      ${query.freshOnly ? db`left join price_sources s on s.name = p.source` : db``}
      where p.source in ${db(sources)}
      ${segment ? db`and c.${db(SEGMENT_COLUMNS[segment.segment])} = ${segment.value}` : db``}
      ${query.freshOnly ? db`and ${freshPriceSql(db, now)}` : db``}
    ),
    by_source as (
      select source,
             count(*) as items_priced,
             sum(price) as lowest_price_sum,
             sum(price * quantity) as listed_value_sum,
             sum(quantity) as listings,
             count(quantity) as items_with_quantity,
             min(source_time) as oldest_source_time,
             max(source_time) as newest_source_time
      from included
      group by source
    ),
    lowest as (
      select min(price) as price from included group by catalog_id, version
    ),
    totals as (
      select (select count(*) from lowest) as items_priced,
             (select sum(price) from lowest) as lowest_price_sum,
             (select sum(price * quantity) from included) as listed_value_sum,
             (select sum(quantity) from included) as listings
    )
    select m.source as marketplace,
           coalesce(b.items_priced, 0)::int as items_priced,
           coalesce(b.lowest_price_sum, 0)::text as lowest_price_sum,
           coalesce(b.listed_value_sum, 0)::text as listed_value_sum,
           coalesce(b.listings, 0)::text as listings,
           coalesce(b.items_with_quantity, 0)::int as items_with_quantity,
           b.oldest_source_time,
           b.newest_source_time,
           t.items_priced::int as total_items_priced,
           coalesce(t.lowest_price_sum, 0)::text as total_lowest_price_sum,
           coalesce(t.listed_value_sum, 0)::text as total_listed_value_sum,
           coalesce(t.listings, 0)::text as total_listings
    from unnest(${sources}::text[]) with ordinality as m(source, ord)
    left join by_source b on b.source = m.source
    cross join totals t
    order by m.ord`;
  const first = rows[0]!;
  return {
    as_of: now.toISOString(),
    currency: 'USD',
    marketplace: query.marketplace,
    segment: segment?.segment ?? null,
    value: segment?.value ?? null,
    fresh_only: query.freshOnly,
    totals: {
      items_priced: first.total_items_priced,
      lowest_price_sum: first.total_lowest_price_sum,
      listed_value_sum: first.total_listed_value_sum,
      listings: Number(first.total_listings),
    },
    marketplaces: rows.map((row) => ({
      marketplace: row.marketplace,
      items_priced: row.items_priced,
      lowest_price_sum: row.lowest_price_sum,
      listed_value_sum: row.listed_value_sum,
      listings: Number(row.listings),
      items_with_quantity: row.items_with_quantity,
      oldest_source_time: row.oldest_source_time?.toISOString() ?? null,
      newest_source_time: row.newest_source_time?.toISOString() ?? null,
    })),
  };
}

/** The cache key of a summary query: every input but the clock. */
export function marketSummaryKey(query: MarketSummaryQuery): string {
  return JSON.stringify([query.marketplace, query.segment?.segment ?? null, query.segment?.value ?? null, query.freshOnly]);
}

/**
 * GET /v2/market/summary bodies per query, read through a TtlCache of PRICE_CACHE_MS (`as_of` is
 * when a summary was computed), dropped on each new price snapshot (clear()). At 0 it keeps nothing
 * and every read computes. Built once in api/deps.ts.
 */
export class MarketSummaryReader {
  private readonly cache: TtlCache<MarketSummary>;

  constructor(
    private readonly db: Queryable,
    ttlMs: number,
    private readonly now: () => Date,
  ) {
    this.cache = new TtlCache<MarketSummary>(ttlMs);
  }

  read(query: MarketSummaryQuery): Promise<MarketSummary> {
    return this.cache.get(marketSummaryKey(query), () => computeMarketSummary(this.db, query, this.now()));
  }

  clear(): void {
    this.cache.clear();
  }
}

/**
 * A small per-process TTL cache with single flight: concurrent misses of one key share one load, a
 * failed load is not kept, and `clear()` (a new price snapshot) drops everything, including loads
 * under way for later callers. A TTL of 0 disables it (every call loads).
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: Promise<V>; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 1_000,
    private readonly clock: () => number = Date.now,
  ) {}

  get enabled(): boolean {
    return this.ttlMs > 0;
  }

  get(key: string, load: () => Promise<V>): Promise<V> {
    if (!this.enabled) return load();
    const cached = this.entries.get(key);
    if (cached && cached.expiresAt > this.clock()) return cached.value;
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    // In flight it never expires; once loaded it lives ttlMs from then.
    const entry = { value: load(), expiresAt: Number.POSITIVE_INFINITY };
    this.entries.set(key, entry);
    entry.value.then(
      () => {
        entry.expiresAt = this.clock() + this.ttlMs;
      },
      () => {
        if (this.entries.get(key) === entry) this.entries.delete(key);
      },
    );
    return entry.value;
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
