-- Retention by dropping whole time partitions (issue 13, docs/design.md §12): the tables that grow with every
-- ingest run become range-partitioned by time, so the maintenance pool prunes them with DROP TABLE of
-- an expired partition (shared/retention/), never a row-wise DELETE.
--
--   price_observations   by ingested_at, a partition a day      RETENTION_OBSERVATIONS_DAYS
--   event_outbox         by created_at, a partition a day       RETENTION_OUTBOX_DAYS
--   price_event_pages    by created_at (its event's), a day     RETENTION_OUTBOX_DAYS
--   ingest_runs          by slot_start, a partition a day       RETENTION_INGEST_RUNS_DAYS
--   market_index_prices  by index_run_id, a UUIDv7 whose first 48 bits are the run's calculation time
--                        in ms: a day's partition holds the ids from that day's first instant on
--                                                               RETENTION_INDEX_VECTORS_DAYS
--   price_rollups        by granularity, then bucket_start: 10m a day, hourly a month, daily a year
--                                                               RETENTION_ROLLUPS_*_DAYS (the history horizons)
--
-- Every partitioned table also gets a DEFAULT partition, so a row outside every range (no partition
-- created ahead yet, a clock far off) is stored rather than refused; the maintenance pool moves such
-- rows into the range partition it creates for them.
--
-- Existing rows are not copied (these tables can hold hundreds of millions of rows): each old table
-- is attached whole as one partition for everything before the cutover (the start of tomorrow, UTC,
-- or later if a table already holds later rows) and is dropped like any other partition once the
-- cutover is older than its table's retention. price_rollups is the exception (rows of three
-- granularities cannot be one list partition): its rows are copied, each granularity into one range
-- partition for everything before its cutover.

-- References into tables whose partitions are dropped cannot be foreign keys (a partition with
-- referencing rows could not be dropped). Deliveries keep the event's type themselves, so their
-- listing outlives the outbox; a delivery still pending when its event expires is failed first.
alter table webhook_deliveries drop constraint webhook_deliveries_event_id_fkey;
alter table webhook_deliveries add column event_type text;
update webhook_deliveries d set event_type = o.event_type from event_outbox o where o.id = d.event_id;
update webhook_deliveries set event_type = 'unknown' where event_type is null;
alter table webhook_deliveries alter column event_type set not null;
alter table price_event_pages drop constraint price_event_pages_event_id_fkey;
alter table market_index_runs drop constraint market_index_runs_ingest_run_id_fkey;

-- The old tables, renamed with their indexes and constraints, so the new ones can take the names.
alter table price_observations rename to price_observations_legacy;
alter table price_observations_default rename to price_observations_legacy_default;
alter index price_observations_item_idx rename to price_observations_legacy_item_idx;

drop trigger event_outbox_notify on event_outbox;
alter table event_outbox rename to event_outbox_legacy;
-- The new key is (id, created_at): the partition key must be in it. Attaching builds it.
alter table event_outbox_legacy drop constraint event_outbox_pkey;
alter table event_outbox_legacy drop constraint event_outbox_workspace_id_fkey;
alter index event_outbox_unpublished_idx rename to event_outbox_legacy_unpublished_idx;

alter table price_event_pages rename to price_event_pages_legacy;
alter table price_event_pages_legacy drop constraint price_event_pages_pkey;
alter index price_event_pages_created_idx rename to price_event_pages_legacy_created_idx;

-- ingest_runs gains slot_start, the start of the run's schedule slot (slot × interval): a function of
-- (source, slot), so unique (source, slot, slot_start) still lets only one worker claim a slot.
alter table ingest_runs rename to ingest_runs_legacy;
alter table ingest_runs_legacy add column slot_start timestamptz;
update ingest_runs_legacy set slot_start = started_at;
alter table ingest_runs_legacy alter column slot_start set not null;
alter table ingest_runs_legacy drop constraint ingest_runs_pkey;
alter table ingest_runs_legacy drop constraint ingest_runs_source_slot_key;

alter table market_index_prices rename to market_index_prices_legacy;
alter index market_index_prices_pkey rename to market_index_prices_legacy_pkey;
alter table market_index_prices_legacy drop constraint market_index_prices_index_run_id_fkey;

alter table price_rollups rename to price_rollups_legacy;
alter index price_rollups_pkey rename to price_rollups_legacy_pkey;

-- The new tables.
create table price_observations (
  catalog_id text not null,
  source text not null,
  version text not null,
  price numeric not null,
  median_price numeric,
  quantity integer,
  source_time timestamptz not null,
  ingested_at timestamptz not null,
  run_id uuid not null
) partition by range (ingested_at);
create index price_observations_item_idx on price_observations (catalog_id, source, version, source_time);
create table price_observations_default partition of price_observations default;

create table event_outbox (
  id uuid not null,
  event_type text not null,
  payload jsonb not null,
  created_at timestamptz not null,
  published_at timestamptz,
  workspace_id uuid references workspaces (id) on delete cascade,
  primary key (id, created_at)
) partition by range (created_at);
create index event_outbox_unpublished_idx on event_outbox (created_at) where published_at is null;
create table event_outbox_default partition of event_outbox default;
create trigger event_outbox_notify after insert on event_outbox for each statement execute function event_outbox_notify();

create table price_event_pages (
  event_id uuid not null,
  -- Named as on the old table: an attached partition must carry the parent's checks by name.
  page integer not null constraint price_event_pages_page_check check (page >= 2),
  items jsonb not null,
  created_at timestamptz not null,
  primary key (event_id, page, created_at)
) partition by range (created_at);
create table price_event_pages_default partition of price_event_pages default;

create table ingest_runs (
  id uuid not null,
  source text not null,
  slot bigint not null,
  slot_start timestamptz not null,
  started_at timestamptz not null,
  finished_at timestamptz,
  status text not null constraint ingest_runs_status_check check (status in ('running', 'succeeded', 'failed')),
  rows_received integer,
  rows_written integer,
  rows_skipped integer,
  unknown_names integer,
  error text,
  primary key (id, slot_start),
  unique (source, slot, slot_start)
) partition by range (slot_start);
-- The market index reads each source's newest successful run.
create index ingest_runs_succeeded_idx on ingest_runs (source, finished_at desc) where status = 'succeeded';
create table ingest_runs_default partition of ingest_runs default;

create table market_index_prices (
  index_run_id uuid not null references market_index_runs (id) on delete cascade,
  catalog_id text not null,
  version text not null,
  type text not null,
  weapon text,
  rarity text,
  exterior text,
  previous_price numeric,
  current_price numeric not null,
  primary key (index_run_id, catalog_id, version)
) partition by range (index_run_id);
create table market_index_prices_default partition of market_index_prices default;

create table price_rollups (
  catalog_id text not null,
  source text not null,
  version text not null,
  granularity text not null check (granularity in ('10m', 'hourly', 'daily')),
  bucket_start timestamptz not null,
  open numeric not null,
  high numeric not null,
  low numeric not null,
  close numeric not null,
  samples integer not null,
  first_at timestamptz not null,
  last_at timestamptz not null,
  primary key (catalog_id, source, granularity, version, bucket_start)
) partition by list (granularity);
create table price_rollups_10m partition of price_rollups for values in ('10m') partition by range (bucket_start);
create table price_rollups_hourly partition of price_rollups for values in ('hourly') partition by range (bucket_start);
create table price_rollups_daily partition of price_rollups for values in ('daily') partition by range (bucket_start);
create table price_rollups_10m_default partition of price_rollups_10m default with (fillfactor = 80);
create table price_rollups_hourly_default partition of price_rollups_hourly default with (fillfactor = 80);
create table price_rollups_daily_default partition of price_rollups_daily default with (fillfactor = 80);

-- The smallest UUIDv7 of an instant: its milliseconds since the epoch in the first 48 bits, zeros after.
create function pg_temp.uuidv7_floor(at timestamptz) returns uuid language sql immutable as $$
  select (substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-0000-0000-000000000000')::uuid
  from lpad(to_hex((extract(epoch from at) * 1000)::bigint), 12, '0') as h
$$;

-- The old rows: attached whole before each table's cutover (rollups: copied), then the next days'
-- partitions. Names are `<table>_p<YYYYMMDD>` (a day), `_p<YYYYMM>` (a month), `_p<YYYY>` (a year).
do $$
declare
  tomorrow timestamptz := (date_trunc('day', now() at time zone 'UTC') + interval '1 day') at time zone 'UTC';
  cutover timestamptz;
  day timestamptz;
  next_month timestamptz := (date_trunc('month', now() at time zone 'UTC') + interval '1 month') at time zone 'UTC';
  next_year timestamptz := (date_trunc('year', now() at time zone 'UTC') + interval '1 year') at time zone 'UTC';
begin
  -- Day-partitioned tables keyed by a time column.
  select greatest(tomorrow, (date_trunc('day', max(ingested_at) at time zone 'UTC') + interval '1 day') at time zone 'UTC') into cutover from price_observations_legacy;
  execute format('alter table price_observations attach partition price_observations_legacy for values from (minvalue) to (%L)', cutover);
  for day in select generate_series(cutover, cutover + interval '6 days', interval '1 day') loop
    execute format('create table %I partition of price_observations for values from (%L) to (%L)',
      'price_observations_p' || to_char(day at time zone 'UTC', 'YYYYMMDD'), day, day + interval '1 day');
  end loop;

  select greatest(tomorrow, (date_trunc('day', max(created_at) at time zone 'UTC') + interval '1 day') at time zone 'UTC') into cutover from event_outbox_legacy;
  execute format('alter table event_outbox attach partition event_outbox_legacy for values from (minvalue) to (%L)', cutover);
  for day in select generate_series(cutover, cutover + interval '6 days', interval '1 day') loop
    execute format('create table %I partition of event_outbox for values from (%L) to (%L)',
      'event_outbox_p' || to_char(day at time zone 'UTC', 'YYYYMMDD'), day, day + interval '1 day');
  end loop;

  select greatest(tomorrow, (date_trunc('day', max(created_at) at time zone 'UTC') + interval '1 day') at time zone 'UTC') into cutover from price_event_pages_legacy;
  execute format('alter table price_event_pages attach partition price_event_pages_legacy for values from (minvalue) to (%L)', cutover);
  for day in select generate_series(cutover, cutover + interval '6 days', interval '1 day') loop
    execute format('create table %I partition of price_event_pages for values from (%L) to (%L)',
      'price_event_pages_p' || to_char(day at time zone 'UTC', 'YYYYMMDD'), day, day + interval '1 day');
  end loop;

  select greatest(tomorrow, (date_trunc('day', max(slot_start) at time zone 'UTC') + interval '1 day') at time zone 'UTC') into cutover from ingest_runs_legacy;
  execute format('alter table ingest_runs attach partition ingest_runs_legacy for values from (minvalue) to (%L)', cutover);
  for day in select generate_series(cutover, cutover + interval '6 days', interval '1 day') loop
    execute format('create table %I partition of ingest_runs for values from (%L) to (%L)',
      'ingest_runs_p' || to_char(day at time zone 'UTC', 'YYYYMMDD'), day, day + interval '1 day');
  end loop;

  -- market_index_prices: run ids are UUIDv7 made from the calculation time (shared/ids.ts).
  select greatest(tomorrow, (date_trunc('day', max(calculated_at) at time zone 'UTC') + interval '1 day') at time zone 'UTC') into cutover from market_index_runs;
  execute format('alter table market_index_prices attach partition market_index_prices_legacy for values from (minvalue) to (%L)', pg_temp.uuidv7_floor(cutover));
  for day in select generate_series(cutover, cutover + interval '6 days', interval '1 day') loop
    execute format('create table %I partition of market_index_prices for values from (%L) to (%L)',
      'market_index_prices_p' || to_char(day at time zone 'UTC', 'YYYYMMDD'), pg_temp.uuidv7_floor(day), pg_temp.uuidv7_floor(day + interval '1 day'));
  end loop;

  -- price_rollups: one range partition per granularity before its cutover, the rows copied in.
  select greatest(tomorrow, (date_trunc('day', max(bucket_start) at time zone 'UTC') + interval '1 day') at time zone 'UTC') into cutover
    from price_rollups_legacy where granularity = '10m';
  execute format('create table price_rollups_10m_legacy partition of price_rollups_10m for values from (minvalue) to (%L) with (fillfactor = 80)', cutover);
  for day in select generate_series(cutover, cutover + interval '6 days', interval '1 day') loop
    execute format('create table %I partition of price_rollups_10m for values from (%L) to (%L) with (fillfactor = 80)',
      'price_rollups_10m_p' || to_char(day at time zone 'UTC', 'YYYYMMDD'), day, day + interval '1 day');
  end loop;
  select greatest(next_month, (date_trunc('month', max(bucket_start) at time zone 'UTC') + interval '1 month') at time zone 'UTC') into cutover
    from price_rollups_legacy where granularity = 'hourly';
  execute format('create table price_rollups_hourly_legacy partition of price_rollups_hourly for values from (minvalue) to (%L) with (fillfactor = 80)', cutover);
  execute format('create table %I partition of price_rollups_hourly for values from (%L) to (%L) with (fillfactor = 80)',
    'price_rollups_hourly_p' || to_char(cutover at time zone 'UTC', 'YYYYMM'), cutover, cutover + interval '1 month');
  select greatest(next_year, (date_trunc('year', max(bucket_start) at time zone 'UTC') + interval '1 year') at time zone 'UTC') into cutover
    from price_rollups_legacy where granularity = 'daily';
  execute format('create table price_rollups_daily_legacy partition of price_rollups_daily for values from (minvalue) to (%L) with (fillfactor = 80)', cutover);
  execute format('create table %I partition of price_rollups_daily for values from (%L) to (%L) with (fillfactor = 80)',
    'price_rollups_daily_p' || to_char(cutover at time zone 'UTC', 'YYYY'), cutover, cutover + interval '1 year');
end
$$;

insert into price_rollups select catalog_id, source, version, granularity, bucket_start, open, high, low, close, samples, first_at, last_at
from price_rollups_legacy;
drop table price_rollups_legacy;
