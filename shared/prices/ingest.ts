import { type EventType, PRICES_UPDATED_PAGE_SIZE, type PricesUpdatedPayload, subscribedEventTypes } from '../events/outbox.ts';
import { copyRows, type Queryable, type Sql } from '../platform/db.ts';
import type { SourceObservation } from '../sources/types.ts';
import { compareDecimals } from '../util/decimal.ts';
import { newId } from '../util/ids.ts';
import { lapTimer } from '../util/laps.ts';
import { appendToPriceStreamLog, type PriceChange, type PriceStreamRelay } from './stream.ts';

/** The market-wide events an ingest run writes, for the endpoints that subscribe to them. */
const PRICE_EVENT_TYPES: readonly EventType[] = ['price.updated', 'prices.updated'];

/** A normalised observation already mapped to the catalog. */
export type StagedObservation = {
  catalog_id: string;
  version: string;
  price: string;
  median_price: string | null;
  /** Absent means null (a source without buy orders or sales counts). */
  bid?: string | null;
  volume_7d?: number | null;
  quantity: number | null;
  source_time: Date;
  /** The upstream's own price and currency when it is not USD (docs/design.md §14: skinbaron's EUR); absent means null. */
  original_price?: string | null;
  original_currency?: string | null;
};

export type CatalogNameMap = Map<string, { catalogId: string; phases: readonly string[] }>;

export async function loadCatalogNameMap(db: Queryable): Promise<CatalogNameMap> {
  const rows = await db<{ catalog_id: string; market_hash_name: string; phases: string[] }[]>`
    select catalog_id, market_hash_name, phases from catalog_items`;
  return new Map(rows.map((row) => [row.market_hash_name, { catalogId: row.catalog_id, phases: row.phases }]));
}

/** The catalog item an upstream (name, version) is: the name unknown to the catalog, or a version the item cannot carry, said so. */
export function catalogItemFor(
  catalog: CatalogNameMap,
  observation: { market_hash_name: string; version: string },
): { catalogId: string } | 'unknown-name' | 'unknown-version' {
  const item = catalog.get(observation.market_hash_name);
  if (!item) return 'unknown-name';
  if (observation.version !== 'default' && !item.phases.includes(observation.version)) return 'unknown-version';
  return item;
}

/**
 * Maps upstream names to catalog ids. Unknown names and versions the item cannot carry are counted
 * (never fatal); duplicates of one (item, version) keep the cheapest ask.
 */
export function mapToCatalog(observations: SourceObservation[], catalog: CatalogNameMap) {
  const staged = new Map<string, StagedObservation>();
  const unknownNames: string[] = [];
  let unknownVersions = 0;
  for (const observation of observations) {
    const item = catalogItemFor(catalog, observation);
    if (item === 'unknown-name') {
      unknownNames.push(observation.market_hash_name);
      continue;
    }
    if (item === 'unknown-version') {
      unknownVersions += 1;
      continue;
    }
    const key = `${item.catalogId}\u0000${observation.version}`;
    const existing = staged.get(key);
    if (existing && compareDecimals(existing.price, observation.price) <= 0) continue;
    staged.set(key, {
      catalog_id: item.catalogId,
      version: observation.version,
      price: observation.price,
      median_price: observation.median_price,
      bid: observation.bid,
      volume_7d: observation.volume_7d,
      quantity: observation.quantity,
      source_time: observation.source_time,
      original_price: observation.original?.price ?? null,
      original_currency: observation.original?.currency ?? null,
    });
  }
  return { staged: [...staged.values()], unknownNames, unknownVersions };
}

/**
 * Claims the run of `source` for `slot` (one scheduled interval), which starts at `slotStart`
 * (slot × interval; the partition key, and a function of the slot, so unique (source, slot,
 * slot_start) still means one claim per slot). Returns null when another worker already has the run,
 * so two workers never double-write one run. `now` (default `slotStart`) is the run's start.
 */
export async function claimIngestRun(db: Queryable, source: string, slot: number, slotStart: Date, now: Date = slotStart): Promise<string | null> {
  const id = newId();
  const rows = await db`
    insert into ingest_runs (id, source, slot, slot_start, started_at, status) values (${id}, ${source}, ${slot}, ${slotStart}, ${now}, 'running')
    on conflict (source, slot, slot_start) do nothing returning id`;
  return rows.length === 1 ? id : null;
}

/** Names a per-item source should price next: never priced by it first, then the stalest. */
export async function stalestNamesForSource(db: Queryable, source: string, limit: number): Promise<string[]> {
  const rows = await db<{ market_hash_name: string }[]>`
    select c.market_hash_name from catalog_items c
    left join latest_prices l on l.catalog_id = c.catalog_id and l.source = ${source} and l.version = 'default'
    order by l.ingested_at asc nulls first, c.market_hash_name
    limit ${limit}`;
  return rows.map((row) => row.market_hash_name);
}

/**
 * prices.updated (docs/design.md §8) from the run's `ingest_changed`: one outbox event holding the first
 * PRICES_UPDATED_PAGE_SIZE items and one price_event_pages row per further page, numbered over a
 * single order (catalog id, version) so pages never skip or repeat an item. Stored once per run,
 * whoever subscribes: fan-out is one delivery per endpoint of this one event.
 */
async function insertPricesUpdatedEvent(tx: Queryable, run: { source: string; runId: string; ingestedAt: Date; itemCount: number }): Promise<void> {
  const eventId = newId();
  const pageCount = Math.ceil(run.itemCount / PRICES_UPDATED_PAGE_SIZE);
  const payload = {
    source: run.source,
    run_id: run.runId,
    ingested_at: run.ingestedAt.toISOString(),
    currency: 'USD',
    item_count: run.itemCount,
    page: 1,
    page_count: pageCount,
  } satisfies Omit<PricesUpdatedPayload, 'items'>;
  await tx`
    with numbered as (
      select catalog_id, version, price, previous_price, bid, volume_7d,
             ((row_number() over (order by catalog_id, version) - 1) / ${PRICES_UPDATED_PAGE_SIZE} + 1)::int as page
      from ingest_changed
    ), pages as (
      select page, jsonb_agg(
               jsonb_build_object('catalog_id', catalog_id, 'version', version, 'price', price::text, 'previous_price', previous_price::text,
                                  'bid', bid::text, 'volume_7d', volume_7d)
               order by catalog_id, version) as items
      from numbered group by page
    ), event as (
      insert into event_outbox (id, event_type, payload, created_at)
      select ${eventId}, 'prices.updated', ${tx.json(payload)}::jsonb || jsonb_build_object('items', items), ${run.ingestedAt}
      from pages where page = 1
    )
    insert into price_event_pages (event_id, page, items, created_at)
    select ${eventId}, page, items, ${run.ingestedAt} from pages where page > 1`;
}

/**
 * One observation per item and version: the newest, the cheapest of equally new ones. A run that
 * sees an item twice then upserts it once and announces it once (price.updated is coalesced per
 * item and version per run) instead of failing on a second upsert of the same key.
 */
export function coalesceObservations(rows: StagedObservation[]): StagedObservation[] {
  const kept = new Map<string, StagedObservation>();
  for (const row of rows) {
    const key = `${row.catalog_id}\u0000${row.version}`;
    const existing = kept.get(key);
    const newer = !existing || row.source_time.getTime() > existing.source_time.getTime();
    const cheaperTie = existing && row.source_time.getTime() === existing.source_time.getTime() && compareDecimals(row.price, existing.price) < 0;
    if (newer || cheaperTie) kept.set(key, row);
  }
  return kept.size === rows.length ? rows : [...kept.values()];
}

/** What a whole-market listing says beyond its rows (writeIngestRun's `listing`). */
export type ListingUpdate = { complete: boolean; delisted: readonly { catalog_id: string; version: string }[] };

/**
 * `written`: observations stored (new or changed); `repeated`: observations identical to the stored
 * latest but newer (freshness advanced, nothing else written); `changed`: prices that differ from
 * the previous one; `streamIds`: the price stream entries that announce them. `timings`: milliseconds per step, for the run's log line and bench:ingest.
 */
export type WriteResult = { written: number; repeated: number; changed: number; streamIds: string[]; timings: Record<string, number> };

/**
 * Writes one run set-based, in one transaction, and only what changed:
 *  - a row not newer than the source's stored latest for its item and version is dropped;
 *  - a row identical to it (same price, median, bid, volume, quantity and original price, as text) but newer only advances the
 *    latest price's source_time, ingested_at and run_id: the source confirmed it, so its freshness
 *    moves on, but it is neither a new observation nor a new history sample;
 *  - every other row is appended to the observations, upserted into the latest prices and merged into
 *    the history rollups; a changed price writes `price.updated` (one per item and version) and the
 *    run one `prices.updated`, each only when some live endpoint subscribes to it.
 * Then the run and its source are marked healthy (the source's freshness advances in every case).
 */
export async function writeIngestRun(
  sql: Sql,
  input: {
    runId: string;
    source: string;
    rows: StagedObservation[];
    ingestedAt: Date;
    staleAfterSeconds: number;
    received: number;
    skipped: number;
    unknownNames: number;
    /**
     * For a source whose fetch lists the whole market (SourceAdapter.listsWholeMarket): `complete` when
     * `rows` is the whole listing (rows of the source not in it have left it), else the rows known to
     * have left it since the last run (`delisted`), the unchanged rest having been left out of `rows`.
     * Absent for other sources.
     */
    listing?: ListingUpdate;
    /**
     * The price stream's relay (shared/prices/stream.ts): the run's changes enter the stream's log in
     * this transaction whatever happens; with a relay they are also copied to Redis right after the
     * commit. A failed relay leaves them in the log for the next one (the ingest pool's relay job).
     */
    relay?: PriceStreamRelay;
  },
): Promise<WriteResult> {
  const { runId, source, ingestedAt } = input;
  const rows = coalesceObservations(input.rows);
  const { timings, lap } = lapTimer();
  let streamIds: string[] = [];
  const result = await sql.begin(async (tx) => {
    // Runs of one source overlap when a run outlasts its interval or two workers hold neighbouring
    // slots: writes of one source are serialised, so each sees what the previous one committed.
    await tx`select pg_advisory_xact_lock(hashtext(${`ingest:${source}`}))`;
    await tx`
      create temp table ingest_stage (
        catalog_id text not null, version text not null, price numeric not null, median_price numeric,
        bid numeric, volume_7d integer, quantity integer, source_time timestamptz not null,
        original_price numeric, original_currency text
      ) on commit drop`;
    if (rows.length > 0) {
      await copyRows(
        tx,
        'ingest_stage (catalog_id, version, price, median_price, bid, volume_7d, quantity, source_time, original_price, original_currency)',
        rows.map((row) => [
          row.catalog_id,
          row.version,
          row.price,
          row.median_price,
          row.bid ?? null,
          row.volume_7d ?? null,
          row.quantity,
          row.source_time.toISOString(),
          row.original_price ?? null,
          row.original_currency ?? null,
        ]),
      );
    }
    // Temp tables have no statistics until analysed; without them the joins below plan badly.
    await tx`analyze ingest_stage`;
    lap('stage');
    const listing = input.listing;
    if (listing?.complete) {
      await tx`
        update latest_prices l set listed = false
        where l.source = ${source} and l.listed
          and not exists (select 1 from ingest_stage s where s.catalog_id = l.catalog_id and s.version = l.version)`;
    } else if (listing && listing.delisted.length > 0) {
      await tx`
        update latest_prices l set listed = false
        from unnest(${listing.delisted.map((key) => key.catalog_id)}::text[], ${listing.delisted.map((key) => key.version)}::text[]) as d (catalog_id, version)
        where l.source = ${source} and l.catalog_id = d.catalog_id and l.version = d.version and l.listed`;
    }
    lap('listing');
    // Out of the stage, in one pass over the stored latest prices: rows not newer than them (an
    // upstream repeating an observation, same source time, is not a new sample), and rows with the
    // same price, median, bid, volume, quantity and original price, later, of which only the latest row's freshness
    // moves. For a whole-market listing the run's listing (price_sources.listed_at) already confirms a
    // listed row: only a row coming back to the listing is touched (listed again, from this time).
    const [dropped] = await tx<{ repeated: number }[]>`
      with compared as (
        select s.catalog_id, s.version, s.source_time,
               l.source_time >= s.source_time or (${listing !== undefined} and l.listed) as stale
        from ingest_stage s
        join latest_prices l on l.source = ${source} and l.catalog_id = s.catalog_id and l.version = s.version
        where l.source_time >= s.source_time
           or (l.price::text = s.price::text
               and l.median_price::text is not distinct from s.median_price::text
               and l.bid::text is not distinct from s.bid::text
               and l.volume_7d is not distinct from s.volume_7d
               and l.quantity is not distinct from s.quantity
               and l.original_price::text is not distinct from s.original_price::text
               and l.original_currency is not distinct from s.original_currency)
      ), confirmed as (
        update latest_prices l set source_time = c.source_time, ingested_at = ${ingestedAt}, run_id = ${runId}, listed = true
        from compared c
        where not c.stale and l.source = ${source} and l.catalog_id = c.catalog_id and l.version = c.version
        returning 1
      ), removed as (
        delete from ingest_stage s using compared c where s.catalog_id = c.catalog_id and s.version = c.version
        returning 1
      )
      select (select count(*)::int from confirmed) as repeated, (select count(*)::int from removed) as removed`;
    const repeated = { count: dropped!.repeated };
    lap('dedupe');
    const written = await tx`
      insert into price_observations (catalog_id, source, version, price, median_price, bid, volume_7d, quantity, source_time, ingested_at, run_id,
                                      original_price, original_currency)
      select catalog_id, ${source}, version, price, median_price, bid, volume_7d, quantity, source_time, ${ingestedAt}, ${runId},
             original_price, original_currency from ingest_stage`;
    lap('observations');
    // The run's changed prices, read once by both event types below.
    await tx`
      create temp table ingest_changed (
        catalog_id text not null, version text not null, price numeric not null, previous_price numeric,
        bid numeric, volume_7d integer, source_time timestamptz not null
      ) on commit drop`;
    const changed = await tx`
      with previous as (
        select l.catalog_id, l.version, l.price from latest_prices l
        join ingest_stage s on s.catalog_id = l.catalog_id and s.version = l.version
        where l.source = ${source}
      ), upserted as (
        insert into latest_prices (catalog_id, source, version, price, median_price, bid, volume_7d, quantity, source_time, ingested_at, run_id,
                                   original_price, original_currency)
        select catalog_id, ${source}, version, price, median_price, bid, volume_7d, quantity, source_time, ${ingestedAt}, ${runId},
               original_price, original_currency from ingest_stage
        on conflict (catalog_id, version, source) do update set
          price = excluded.price, median_price = excluded.median_price, bid = excluded.bid, volume_7d = excluded.volume_7d,
          original_price = excluded.original_price, original_currency = excluded.original_currency,
          quantity = excluded.quantity, source_time = excluded.source_time, ingested_at = excluded.ingested_at, run_id = excluded.run_id,
          listed = true
        returning catalog_id, version, price, bid, volume_7d, source_time
      )
      insert into ingest_changed (catalog_id, version, price, previous_price, bid, volume_7d, source_time)
      select u.catalog_id, u.version, u.price, p.price, u.bid, u.volume_7d, u.source_time
      from upserted u
      left join previous p on p.catalog_id = u.catalog_id and p.version = u.version
      where p.price is distinct from u.price`;
    if (changed.count > 0) {
      const subscribed = await subscribedEventTypes(tx, PRICE_EVENT_TYPES);
      if (subscribed.has('price.updated')) {
        await tx`
          insert into event_outbox (id, event_type, payload, created_at)
          select gen_random_uuid(), 'price.updated',
                 jsonb_build_object(
                   'catalog_id', u.catalog_id, 'market_hash_name', c.market_hash_name, 'source', ${source}::text,
                   'version', u.version, 'price', u.price::text, 'previous_price', u.previous_price::text,
                   'bid', u.bid::text, 'volume_7d', u.volume_7d, 'currency', 'USD', 'source_time', u.source_time),
                 ${ingestedAt}
          from ingest_changed u
          join catalog_items c on c.catalog_id = u.catalog_id`;
      }
      if (subscribed.has('prices.updated')) await insertPricesUpdatedEvent(tx, { source, runId, ingestedAt, itemCount: changed.count });
    }
    lap('latest_outbox');
    await tx`
      insert into price_rollups (catalog_id, source, version, granularity, bucket_start, open, high, low, close, samples, first_at, last_at)
      select s.catalog_id, ${source}, s.version, g.granularity, date_bin(g.step, s.source_time, timestamptz '2000-01-01T00:00:00Z'),
             s.price, s.price, s.price, s.price, 1, s.source_time, s.source_time
      from ingest_stage s
      cross join (values ('10m', interval '10 minutes'), ('hourly', interval '1 hour'), ('daily', interval '1 day')) as g (granularity, step)
      on conflict (catalog_id, source, version, granularity, bucket_start) do update set
        open = case when excluded.first_at < price_rollups.first_at then excluded.open else price_rollups.open end,
        close = case when excluded.last_at >= price_rollups.last_at then excluded.close else price_rollups.close end,
        high = greatest(price_rollups.high, excluded.high),
        low = least(price_rollups.low, excluded.low),
        samples = price_rollups.samples + excluded.samples,
        first_at = least(price_rollups.first_at, excluded.first_at),
        last_at = greatest(price_rollups.last_at, excluded.last_at)`;
    lap('rollups');
    await tx`
      update ingest_runs set status = 'succeeded', finished_at = ${new Date()}, rows_received = ${input.received},
        rows_written = ${written.count}, rows_skipped = ${input.skipped}, unknown_names = ${input.unknownNames}
      where id = ${runId}`;
    await tx`
      insert into price_sources (name, last_success_at, last_attempt_at, last_error, stale_after_seconds, last_run_id,
                                 last_rows_written, last_rows_skipped, last_unknown_names, consecutive_failures, listed_at)
      values (${source}, ${ingestedAt}, ${ingestedAt}, null, ${input.staleAfterSeconds}, ${runId},
              ${written.count}, ${input.skipped}, ${input.unknownNames}, 0, ${listing ? ingestedAt : null})
      on conflict (name) do update set
        last_success_at = excluded.last_success_at, last_attempt_at = excluded.last_attempt_at, last_error = null,
        listed_at = coalesce(excluded.listed_at, price_sources.listed_at),
        stale_after_seconds = excluded.stale_after_seconds, last_run_id = excluded.last_run_id,
        last_rows_written = excluded.last_rows_written, last_rows_skipped = excluded.last_rows_skipped,
        last_unknown_names = excluded.last_unknown_names, consecutive_failures = 0`;
    lap('health');
    // The price stream's log (shared/prices/stream.ts), last: it takes the log head's lock, held to
    // the commit. The changes in the order prices.updated pages them.
    if (changed.count > 0) {
      const changes = await tx<PriceChange[]>`
        select u.catalog_id, c.market_hash_name, u.version, u.price::text as price, u.previous_price::text as previous_price, u.bid::text as bid
        from ingest_changed u
        join catalog_items c on c.catalog_id = u.catalog_id
        order by u.catalog_id, u.version`;
      streamIds = await appendToPriceStreamLog(tx, { runId, source, ingestedAt }, changes);
      lap('stream_log');
    }
    return { written: written.count, repeated: repeated.count, changed: changed.count };
  });
  lap('commit');
  if (input.relay && streamIds.length > 0) {
    // Never throws: the run is committed, and its entries wait in the log for the next relay.
    await input.relay.relaySafely();
    lap('stream');
  }
  return { ...result, streamIds, timings };
}

/** Records a failed run: the source keeps its last success (and so turns stale in time). */
export async function recordIngestFailure(
  sql: Sql,
  input: { runId: string; source: string; error: string; at: Date; staleAfterSeconds: number },
): Promise<void> {
  const error = input.error.slice(0, 500);
  await sql.begin(async (tx) => {
    await tx`update ingest_runs set status = 'failed', finished_at = ${input.at}, error = ${error} where id = ${input.runId}`;
    await tx`
      insert into price_sources (name, last_attempt_at, last_error, last_error_at, stale_after_seconds, last_run_id, consecutive_failures)
      values (${input.source}, ${input.at}, ${error}, ${input.at}, ${input.staleAfterSeconds}, ${input.runId}, 1)
      on conflict (name) do update set
        last_attempt_at = excluded.last_attempt_at, last_error = excluded.last_error, last_error_at = excluded.last_error_at,
        stale_after_seconds = excluded.stale_after_seconds, last_run_id = excluded.last_run_id,
        consecutive_failures = price_sources.consecutive_failures + 1`;
  });
}
