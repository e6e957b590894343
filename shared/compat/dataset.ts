import type { Queryable } from '../platform/db.ts';
import { findLatestRates } from '../fx/repository.ts';
import { computeConsensus } from '../prices/consensus.ts';
import { observedAtSql, priceIsFresh, type SourceClock } from '../prices/freshness.ts';
import { findSourceClocks } from '../prices/repository.ts';
import type { SalesWindowName } from '../sources/types.ts';
import type { CompatDataset, CompatItem, CompatSalesWindow, CompatVersion } from './types.ts';

type SalesRow = {
  market_hash_name: string;
  catalog_id: string;
  version: string;
  source: string | null;
  sales_window: SalesWindowName;
  median: string | null;
  mean: string | null;
  min: string | null;
  max: string | null;
  volume: number;
  source_time_ms: number;
};

/**
 * The CompatDataset of one snapshot (shared/compat/types.ts), read set-based in three queries: every
 * latest price with its item (freshness and the consensus judged at `now`, the snapshot's build time,
 * by the rule of GET /health), every source's sales windows, every combined window. Items in byte
 * order of market_hash_name; an item appears when it has a price or a sales window.
 */
export async function readCompatDataset(db: Queryable, now: Date): Promise<CompatDataset> {
  const [prices, sales, combined, clocks, rates] = await Promise.all([
    db<
      {
        market_hash_name: string;
        catalog_id: string;
        version: string;
        source: string;
        price: string;
        median_price: string | null;
        bid: string | null;
        volume_7d: number | null;
        quantity: number | null;
        source_time_ms: number;
        observed_ms: number;
      }[]
    >`
      select c.market_hash_name, c.catalog_id, p.version, p.source, p.price::text as price, p.median_price::text as median_price,
             p.bid::text as bid, p.volume_7d, p.quantity,
             (extract(epoch from p.source_time) * 1000)::float8 as source_time_ms,
             (extract(epoch from ${observedAtSql(db)}) * 1000)::float8 as observed_ms
      from current_prices p
      join catalog_items c on c.catalog_id = p.catalog_id
      left join price_sources s on s.name = p.source`,
    db<SalesRow[]>`
      select c.market_hash_name, c.catalog_id, s.version, s.source, s.sales_window, s.median::text as median, s.mean::text as mean,
             s.min::text as min, s.max::text as max, s.volume, (extract(epoch from s.source_time) * 1000)::float8 as source_time_ms
      from source_sales s join catalog_items c on c.catalog_id = s.catalog_id`,
    // A combined window is as old as its last recombination (item_sales keeps no source time of its own).
    db<(SalesRow & { source: null })[]>`
      select c.market_hash_name, c.catalog_id, w.version, w.sales_window, w.median::text as median, w.mean::text as mean,
             w.min::text as min, w.max::text as max, w.volume, (extract(epoch from w.updated_at) * 1000)::float8 as source_time_ms
      from item_sales w join catalog_items c on c.catalog_id = w.catalog_id`,
    findSourceClocks(db),
    findLatestRates(db),
  ]);
  const nowMs = now.getTime();
  const never: SourceClock = { lastSuccessMs: null, staleAfterSeconds: 0 };
  const items = new Map<string, CompatItem>();
  const versionOf = (name: string, catalogId: string, version: string): CompatVersion => {
    let item = items.get(name);
    if (!item) items.set(name, (item = { market_hash_name: name, catalog_id: catalogId, first_seen_ms: null, versions: {} }));
    let entry = item.versions[version];
    if (!entry) item.versions[version] = entry = { sources: {}, consensus: null, sales: {}, combined: {} };
    return entry;
  };
  for (const row of prices) {
    versionOf(row.market_hash_name, row.catalog_id, row.version).sources[row.source] = {
      price: row.price,
      median_price: row.median_price,
      bid: row.bid,
      volume_7d: row.volume_7d,
      quantity: row.quantity,
      source_time_ms: row.source_time_ms,
      fresh: priceIsFresh(row.observed_ms, clocks.get(row.source) ?? never, nowMs),
    };
  }
  const window = (row: SalesRow): CompatSalesWindow => ({
    median: row.median,
    mean: row.mean,
    min: row.min,
    max: row.max,
    volume: row.volume,
    source_time_ms: row.source_time_ms,
  });
  for (const row of sales) {
    const entry = versionOf(row.market_hash_name, row.catalog_id, row.version);
    (entry.sales[row.source!] ??= {})[row.sales_window] = window(row);
  }
  for (const row of combined) versionOf(row.market_hash_name, row.catalog_id, row.version).combined[row.sales_window] = window(row);
  for (const item of items.values()) {
    for (const entry of Object.values(item.versions)) {
      const names = Object.keys(entry.sources);
      if (names.length === 0) continue;
      entry.consensus = computeConsensus(names.map((source) => ({ source, price: entry.sources[source]!.price, bid: entry.sources[source]!.bid, fresh: entry.sources[source]!.fresh }))).consensus?.price ?? null;
    }
  }
  const ordered = [...items.values()].sort((a, b) => (a.market_hash_name < b.market_hash_name ? -1 : a.market_hash_name > b.market_hash_name ? 1 : 0));
  return {
    built_at_ms: nowMs,
    items: ordered,
    rates: rates ? { as_of: rates.as_of, per_eur: Object.fromEntries(rates.rates) } : null,
  };
}
