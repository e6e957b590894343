-- Catalog and price data plane: catalog items, ingest runs, raw observations (partitioned by
-- ingest time), latest prices, history rollups, source health, the event outbox and the
-- keyless price snapshot. Prices are `numeric` (never floats) and keep the scale upstream sent.

create extension if not exists pg_trgm;

create table catalog_items (
  catalog_id text primary key,
  market_hash_name text not null unique,
  type text not null,
  weapon text,
  exterior text,
  rarity text,
  stattrak boolean not null default false,
  souvenir boolean not null default false,
  definition_index integer,
  paint_index integer,
  -- Price versions beyond `default` the item can carry (Doppler phases), e.g. {phase-1,ruby}.
  phases text[] not null default '{}',
  synced_at timestamptz not null default now()
);
-- `q` is a literal substring: a trigram index serves `lower(market_hash_name) like '%…%'`.
create index catalog_items_name_trgm_idx on catalog_items using gin (lower(market_hash_name) gin_trgm_ops);
create index catalog_items_type_idx on catalog_items (type, market_hash_name);
create index catalog_items_weapon_idx on catalog_items (weapon, market_hash_name);

-- One row per scheduled run of a source; (source, slot) makes a second worker's copy of the same
-- run a no-op.
create table ingest_runs (
  id uuid primary key,
  source text not null,
  slot bigint not null,
  started_at timestamptz not null,
  finished_at timestamptz,
  status text not null check (status in ('running', 'succeeded', 'failed')),
  rows_received integer,
  rows_written integer,
  rows_skipped integer,
  unknown_names integer,
  error text,
  unique (source, slot)
);

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
-- Monthly partitions are added ahead of time by the ingest pool; the default one catches the rest.
create table price_observations_default partition of price_observations default;
create index price_observations_item_idx on price_observations (catalog_id, source, version, source_time);

create table latest_prices (
  catalog_id text not null references catalog_items (catalog_id),
  source text not null,
  version text not null,
  price numeric not null,
  median_price numeric,
  quantity integer,
  source_time timestamptz not null,
  ingested_at timestamptz not null,
  run_id uuid not null,
  primary key (catalog_id, version, source)
) with (fillfactor = 70); -- updated every run: room for HOT updates
create index latest_prices_source_idx on latest_prices (source, catalog_id);

-- History buckets, merged at ingest time so history reads never scan raw observations.
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
  -- Granularity before version: a history page without `version` still seeks on bucket_start.
  primary key (catalog_id, source, granularity, version, bucket_start)
) with (fillfactor = 80);

alter table price_sources
  add column last_error_at timestamptz,
  add column last_run_id uuid,
  add column last_rows_written integer,
  add column last_rows_skipped integer,
  add column last_unknown_names integer,
  add column consecutive_failures integer not null default 0;

-- Events written in the same transaction as the change they announce; the webhooks pool delivers them.
create table event_outbox (
  id uuid primary key,
  event_type text not null,
  payload jsonb not null,
  created_at timestamptz not null,
  published_at timestamptz
);
create index event_outbox_unpublished_idx on event_outbox (created_at) where published_at is null;

-- The keyless GET /v1/prices body, rebuilt after each ingest run and served from API memory.
create table price_snapshots (
  id bigint generated always as identity primary key,
  created_at timestamptz not null,
  etag text not null,
  item_count integer not null,
  oldest_input_at timestamptz,
  body bytea not null,
  body_gzip bytea not null,
  body_br bytea not null
);
