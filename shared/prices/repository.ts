import type { Queryable } from '../platform/db.ts';
import { DEFAULT_STALE_AFTER_SECONDS, observedAtSql, type SourceClock } from './freshness.ts';

/**
 * Reads of the price data plane (sql/0002): latest prices (through the current_prices view, sql/0013,
 * which dates a still-listed price of a whole-market source at its last listing), price_rollups,
 * price_sources and price_snapshots. Prices are selected as `numeric::text` and never pass through a
 * JS number.
 */

export { DEFAULT_STALE_AFTER_SECONDS };

export type PricedItem = { catalog_id: string; market_hash_name: string };

export async function findCatalogItemById(db: Queryable, catalogId: string): Promise<PricedItem | null> {
  const [row] = await db<PricedItem[]>`
    select catalog_id, market_hash_name from catalog_items where catalog_id = ${catalogId}`;
  return row ?? null;
}

export type CurrentPriceRow = {
  version: string;
  source: string;
  price: string;
  median_price: string | null;
  bid: string | null;
  volume_7d: number | null;
  quantity: number | null;
  source_time: Date;
  ingested_at: Date;
  /** When we last saw the price at this value, never later than we read it (shared/prices/freshness.ts). */
  observed_at: Date;
  stale_after_seconds: number;
  /** The source's last successful run: a price is never fresh while its source is stale. */
  last_success_at: Date | null;
  /** docs/design.md §14: the upstream's own price and currency where it is not USD (skinbaron's EUR), else null. */
  original_price: string | null;
  original_currency: string | null;
};

/**
 * One item and every stored (version, source) price of it, in one round trip: null when the item
 * is unknown; `prices` ordered by version (default first) then source.
 */
export async function findItemWithCurrentPrices(db: Queryable, catalogId: string): Promise<{ item: PricedItem; prices: CurrentPriceRow[] } | null> {
  const rows = await db<(PricedItem & { [K in keyof CurrentPriceRow]: CurrentPriceRow[K] | null })[]>`
    select c.catalog_id, c.market_hash_name,
           p.version, p.source, p.price::text as price, p.median_price::text as median_price,
           p.bid::text as bid, p.volume_7d, p.quantity, p.source_time, p.ingested_at,
           p.original_price::text as original_price, p.original_currency,
           ${observedAtSql(db)} as observed_at, s.last_success_at,
           coalesce(s.stale_after_seconds, ${DEFAULT_STALE_AFTER_SECONDS}::int) as stale_after_seconds
    from catalog_items c
    left join current_prices p on p.catalog_id = c.catalog_id
    left join price_sources s on s.name = p.source
    where c.catalog_id = ${catalogId}
    order by p.version <> 'default', p.version collate "C", p.source collate "C"`;
  const first = rows[0];
  if (!first) return null;
  const prices = rows.filter((row): row is PricedItem & CurrentPriceRow => row.version !== null);
  return { item: { catalog_id: first.catalog_id, market_hash_name: first.market_hash_name }, prices };
}

/**
 * A text that changes whenever an ingest run has written prices: every source's (and sales reader's) last success. An
 * ingest run writes latest prices, rollups and its source's price_sources row (last_success_at =
 * the run's ingest time) in one transaction (writeIngestRun), so once this text has changed, the
 * run's prices are visible too. Epoch seconds keep it independent of the session's time zone.
 */
export async function findIngestRunMarker(db: Queryable): Promise<string> {
  const [row] = await db<{ marker: string }[]>`
    select coalesce(string_agg(name || '@' || extract(epoch from last_success_at)::text, ',' order by name), '') as marker
    from (
      select name, last_success_at from price_sources where last_success_at is not null
      union all
      -- docs/design.md §19: a sales read (shared/prices/sales.ts) changes the keyed answers' sales windows.
      select 'sales:' || name, last_success_at from sales_readers where last_success_at is not null
    ) runs`;
  return row?.marker ?? '';
}

export type Granularity = '10m' | 'hourly' | 'daily';

export type HistoryFilters = {
  catalogId: string;
  source: string;
  granularity: Granularity;
  /** One version, or every stored version as its own series. */
  version: string | null;
  /** Inclusive. */
  from: Date;
  /** Exclusive. */
  to: Date;
};

/** Keyset position: the last point of a page, in (version, bucket_start) order. */
export type HistoryPosition = { version: string; bucket_start: string };

export type HistoryPoint = {
  version: string;
  bucket_start: string;
  open: string;
  high: string;
  low: string;
  close: string;
  samples: number;
};

/** "00" … "59". */
const TWO_DIGITS = Array.from({ length: 60 }, (_, value) => String(value).padStart(2, '0'));
/** The last UTC day formatted, `YYYY-MM-DDT`: a page's buckets fall on a handful of days. */
let formattedDay = { day: Number.NaN, prefix: '' };

/**
 * A bucket_start from its epoch seconds as Postgres writes them (`1767268800.123456`, microseconds
 * exact), as RFC 3339 UTC: with `digits` fraction digits (3 for the response, cut like to_char's MS
 * and Date#toISOString; 6 for a cursor position). extract(epoch) costs Postgres a quarter less than
 * to_char, and formatting here about half of a Date#toISOString per point. Buckets are never
 * before 1970 (nor are the window's bounds).
 */
function formatBucketStart(epoch: string, digits: 3 | 6): string {
  const dot = epoch.indexOf('.');
  const seconds = Number(dot < 0 ? epoch : epoch.slice(0, dot));
  const fraction = dot < 0 ? '000000' : epoch.slice(dot + 1).padEnd(6, '0');
  const day = Math.floor(seconds / 86_400);
  if (day !== formattedDay.day) formattedDay = { day, prefix: new Date(day * 86_400_000).toISOString().slice(0, 11) };
  const second = seconds - day * 86_400;
  return `${formattedDay.prefix}${TWO_DIGITS[Math.floor(second / 3600)]}:${TWO_DIGITS[Math.floor(second / 60) % 60]}:${TWO_DIGITS[second % 60]}.${fraction.slice(0, digits)}Z`;
}

/**
 * The versions an item has rollups in at one source and granularity, in the table's order, from
 * `fromVersion` on: a loose index scan (one primary-key probe per version) rather than a scan of
 * every bucket.
 */
async function listHistoryVersions(db: Queryable, filters: HistoryFilters, fromVersion: string | null): Promise<string[]> {
  const rows = await db<{ version: string }[]>`
    with recursive versions (version) as (
      (select version from price_rollups
       where catalog_id = ${filters.catalogId} and source = ${filters.source} and granularity = ${filters.granularity}
         ${fromVersion === null ? db`` : db`and version >= ${fromVersion}`}
       order by version limit 1)
      union all
      select (select r.version from price_rollups r
              where r.catalog_id = ${filters.catalogId} and r.source = ${filters.source} and r.granularity = ${filters.granularity}
                and r.version > versions.version
              order by r.version limit 1)
      from versions where versions.version is not null
    )
    select version from versions where version is not null`;
  return rows.map((row) => row.version);
}

/**
 * One page of rollup buckets in (version, bucket_start) order, read from price_rollups only (never
 * from raw observations). `next` is the last point's position when more points follow.
 *
 * Each version is read on its own, seeking on (…, version, bucket_start) straight to the window: a
 * single query over every version cannot seek on bucket_start past the primary key's version
 * column, and walked every bucket of the item before the window (a year of 10m buckets read to
 * serve a page from its middle: ~4 ms of Postgres CPU a page instead of ~1). Filters stay on
 * granularity and bucket_start, so a table partitioned by them is pruned. Each row comes as one
 * text (epoch, open, high, low, close, samples): half the client's per-row parsing of separate
 * columns, and no numeric-to-text casts on top of Postgres's own output.
 */
export async function listHistoryPoints(
  db: Queryable,
  filters: HistoryFilters,
  after: HistoryPosition | null,
  limit: number,
): Promise<{ points: HistoryPoint[]; next: HistoryPosition | null }> {
  const versions = filters.version !== null ? [filters.version] : await listHistoryVersions(db, filters, after?.version ?? null);
  const points: HistoryPoint[] = [];
  let last: { version: string; epoch: string } | null = null;
  let more = false;
  for (const version of versions) {
    const wanted = limit - points.length + 1;
    const rows = await db<{ point: string }[]>`
      select concat_ws(' ', extract(epoch from bucket_start), open, high, low, close, samples) as point
      from price_rollups
      where catalog_id = ${filters.catalogId}
        and source = ${filters.source}
        and granularity = ${filters.granularity}
        and version = ${version}
        and bucket_start >= ${filters.from}
        and bucket_start < ${filters.to}
        ${after ? db`and (version, bucket_start) > (${after.version}::text, ${after.bucket_start}::text::timestamptz)` : db``}
      order by bucket_start
      limit ${wanted}`;
    for (const { point } of rows) {
      if (points.length === limit) {
        more = true;
        break;
      }
      // Postgres writes numerics and integers without spaces.
      const [epoch, open, high, low, close, samples] = point.split(' ') as [string, string, string, string, string, string];
      points.push({ version, bucket_start: formatBucketStart(epoch, 3), open, high, low, close, samples: Number(samples) });
      last = { version, epoch };
    }
    if (more) break;
  }
  // The position keeps microseconds, so a bucket_start off the millisecond grid is never repeated
  // (hence ::text above: postgres.js would send a timestamptz parameter cut to milliseconds).
  return { points, next: more && last ? { version: last.version, bucket_start: formatBucketStart(last.epoch, 6) } : null };
}

/** One latest price of the snapshot input. */
export type SnapshotInputRow = {
  market_hash_name: string;
  catalog_id: string;
  version: string;
  source: string;
  price: string;
  bid: string | null;
  volume_7d: number | null;
  source_time: string;
  /** When we last saw the price at this value, ms since epoch (shared/prices/freshness.ts): what the list's freshness is judged on. */
  observed_ms: number;
  /** docs/design.md §14: the upstream's own price and currency where it is not USD (skinbaron's EUR); null (or absent) otherwise. */
  original_price?: string | null;
  original_currency?: string | null;
  /** docs/design.md §19: the version's combined 7-day sales window (item_sales), on each of its rows; null without one. */
  sales_7d_median?: string | null;
  /** Not in the list; read for the drop-in formats gathered in the same pass (shared/compat/dataset.ts). */
  median_price?: string | null;
  quantity?: number | null;
  sales_7d_volume?: number | null;
};

/**
 * Every latest price joined to its catalog item, in one set-based query over flat rows (cheaper than
 * grouping in Postgres: no per-group sorts). Rows come in byte order of market_hash_name
 * (independent of the database collation, so the snapshot's bytes, and its ETag, change only when
 * prices do), `default` first within an item, then versions and sources in byte order.
 */
function snapshotInputsQuery(db: Queryable) {
  return db<SnapshotInputRow[]>`
    select c.market_hash_name, c.catalog_id, p.version, p.source, p.price::text as price, p.bid::text as bid, p.volume_7d,
           p.original_price::text as original_price, p.original_currency, p.median_price::text as median_price, p.quantity,
           -- RFC 3339 UTC with milliseconds: the same text as Date#toISOString.
           to_char(p.source_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as source_time,
           (extract(epoch from ${observedAtSql(db)}) * 1000)::float8 as observed_ms,
           w.median::text as sales_7d_median, w.volume as sales_7d_volume
    from current_prices p
    join catalog_items c on c.catalog_id = p.catalog_id
    left join price_sources s on s.name = p.source
    left join item_sales w on w.catalog_id = p.catalog_id and w.version = p.version and w.sales_window = '7d'
    order by c.market_hash_name collate "C", p.version <> 'default', p.version collate "C", p.source collate "C"`;
}

export async function readSnapshotInputs(db: Queryable): Promise<SnapshotInputRow[]> {
  return snapshotInputsQuery(db);
}

/**
 * The same rows in chunks of `chunkSize` through a server-side cursor (inside a transaction), so a
 * snapshot build never holds every row at once.
 */
export async function streamSnapshotInputs(db: Queryable, chunkSize: number, onRows: (rows: SnapshotInputRow[]) => void): Promise<void> {
  await snapshotInputsQuery(db).cursor(chunkSize, (rows) => {
    onRows(rows);
  });
}

/** Every source's last success and stale threshold, for judging freshness in the keyless list (shared/prices/freshness.ts). */
export async function findSourceClocks(db: Queryable): Promise<Map<string, SourceClock>> {
  const rows = await db<{ name: string; last_success_at: Date | null; stale_after_seconds: number }[]>`
    select name, last_success_at, stale_after_seconds from price_sources`;
  return new Map(rows.map((row) => [row.name, { lastSuccessMs: row.last_success_at?.getTime() ?? null, staleAfterSeconds: row.stale_after_seconds }]));
}

export type PriceSnapshotRecord = {
  id: number;
  created_at: Date;
  etag: string;
  item_count: number;
  oldest_input_at: Date | null;
  body: Buffer;
  /** Null since sql/0010: the API compresses the list when it first serves it (snapshots built before keep theirs). */
  body_gzip: Buffer | null;
  body_br: Buffer | null;
};

export type NewPriceSnapshot = Omit<PriceSnapshotRecord, 'id'>;

export async function insertPriceSnapshot(db: Queryable, snapshot: NewPriceSnapshot): Promise<number> {
  const [row] = await db<{ id: bigint }[]>`
    insert into price_snapshots (created_at, etag, item_count, oldest_input_at, body, body_gzip, body_br)
    values (${snapshot.created_at}, ${snapshot.etag}, ${snapshot.item_count}, ${snapshot.oldest_input_at},
            ${snapshot.body}, ${snapshot.body_gzip}, ${snapshot.body_br})
    returning id`;
  return Number(row!.id);
}

/** Keeps the newest `keep` snapshots (by id); returns how many were deleted. */
export async function deleteOlderPriceSnapshots(db: Queryable, keep: number): Promise<number> {
  const result = await db`
    delete from price_snapshots
    where id < (select min(id) from (select id from price_snapshots order by id desc limit ${keep}) newest)`;
  return result.count;
}

export async function findNewestPriceSnapshotHeader(db: Queryable): Promise<{ id: number; etag: string } | null> {
  const [row] = await db<{ id: bigint; etag: string }[]>`select id, etag from price_snapshots order by id desc limit 1`;
  return row ? { id: Number(row.id), etag: row.etag } : null;
}

export async function findNewestPriceSnapshotId(db: Queryable): Promise<number | null> {
  const [row] = await db<{ id: bigint | null }[]>`select max(id) as id from price_snapshots`;
  return row?.id != null ? Number(row.id) : null;
}

export async function findNewestPriceSnapshot(db: Queryable): Promise<PriceSnapshotRecord | null> {
  const [row] = await db<(Omit<PriceSnapshotRecord, 'id'> & { id: bigint })[]>`
    select id, created_at, etag, item_count, oldest_input_at, body, body_gzip, body_br
    from price_snapshots order by id desc limit 1`;
  return row ? { ...row, id: Number(row.id) } : null;
}
