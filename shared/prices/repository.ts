import type { Queryable } from '../db.ts';

/**
 * Reads of the price data plane (sql/0002): latest_prices, price_rollups, price_sources and
 * price_snapshots. Prices are selected as `numeric::text` and never pass through a JS number.
 */

/** Used when a source has no price_sources row (same default as the column). */
export const DEFAULT_STALE_AFTER_SECONDS = 600;

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
  quantity: number | null;
  source_time: Date;
  ingested_at: Date;
  stale_after_seconds: number;
};

/**
 * One item and every stored (version, source) price of it, or of one version, in one round trip:
 * null when the item is unknown; `prices` ordered by version (default first) then source.
 */
export async function findItemWithCurrentPrices(
  db: Queryable,
  catalogId: string,
  version?: string,
): Promise<{ item: PricedItem; prices: CurrentPriceRow[] } | null> {
  const rows = await db<(PricedItem & { [K in keyof CurrentPriceRow]: CurrentPriceRow[K] | null })[]>`
    select c.catalog_id, c.market_hash_name,
           p.version, p.source, p.price::text as price, p.median_price::text as median_price, p.quantity,
           p.source_time, p.ingested_at,
           coalesce(s.stale_after_seconds, ${DEFAULT_STALE_AFTER_SECONDS}::int) as stale_after_seconds
    from catalog_items c
    left join latest_prices p on p.catalog_id = c.catalog_id ${version ? db`and p.version = ${version}` : db``}
    left join price_sources s on s.name = p.source
    where c.catalog_id = ${catalogId}
    order by p.version <> 'default', p.version collate "C", p.source collate "C"`;
  const first = rows[0];
  if (!first) return null;
  const prices = rows.filter((row): row is PricedItem & CurrentPriceRow => row.version !== null);
  return { item: { catalog_id: first.catalog_id, market_hash_name: first.market_hash_name }, prices };
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

/**
 * One page of rollup buckets in (version, bucket_start) order, read from price_rollups only (never
 * from raw observations). `next` is the last point's position when more points follow.
 */
export async function listHistoryPoints(
  db: Queryable,
  filters: HistoryFilters,
  after: HistoryPosition | null,
  limit: number,
): Promise<{ points: HistoryPoint[]; next: HistoryPosition | null }> {
  const rows = await db<(HistoryPoint & { position: string })[]>`
    select version,
           to_char(bucket_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as bucket_start,
           to_char(bucket_start at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as position,
           open::text as open, high::text as high, low::text as low, close::text as close, samples
    from price_rollups
    where catalog_id = ${filters.catalogId}
      and source = ${filters.source}
      and granularity = ${filters.granularity}
      ${filters.version ? db`and version = ${filters.version}` : db``}
      and price_rollups.bucket_start >= ${filters.from}
      and price_rollups.bucket_start < ${filters.to}
      ${after ? db`and (price_rollups.version, price_rollups.bucket_start) > (${after.version}::text, ${after.bucket_start}::timestamptz)` : db``}
    -- Qualified: the bare name would mean the to_char() output column above and defeat the index.
    -- The column's own collation (no COLLATE): the primary key's order then serves this directly,
    -- and the row comparison above uses the same order, so pages neither skip nor repeat.
    order by price_rollups.version, price_rollups.bucket_start
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return {
    points: page.map(({ position: _position, ...point }) => point),
    // The position keeps microseconds, so a bucket_start off the millisecond grid is never repeated.
    next: rows.length > limit && last ? { version: last.version, bucket_start: last.position } : null,
  };
}

/** One latest price of the snapshot input. */
export type SnapshotInputRow = {
  market_hash_name: string;
  catalog_id: string;
  version: string;
  source: string;
  price: string;
  source_time: string;
};

/**
 * Every latest price joined to its catalog item, in one set-based query over flat rows (cheaper than
 * grouping in Postgres: no per-group sorts). Rows come in byte order of market_hash_name
 * (independent of the database collation, so the snapshot's bytes, and its ETag, change only when
 * prices do), `default` first within an item, then versions and sources in byte order.
 */
export async function readSnapshotInputs(db: Queryable): Promise<SnapshotInputRow[]> {
  return db<SnapshotInputRow[]>`
    select c.market_hash_name, c.catalog_id, p.version, p.source, p.price::text as price,
           -- RFC 3339 UTC with milliseconds: the same text as Date#toISOString.
           to_char(p.source_time at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as source_time
    from latest_prices p
    join catalog_items c on c.catalog_id = p.catalog_id
    order by c.market_hash_name collate "C", p.version <> 'default', p.version collate "C", p.source collate "C"`;
}

export type PriceSnapshotRecord = {
  id: number;
  created_at: Date;
  etag: string;
  item_count: number;
  oldest_input_at: Date | null;
  body: Buffer;
  body_gzip: Buffer;
  body_br: Buffer;
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
