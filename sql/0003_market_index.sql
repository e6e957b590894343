-- Market index cs2.chain-equal-weight.v1: one index run per (marketplace, ingest run) holds the
-- marketplace's fresh price vector at that run; each segment's calculation links to the previous
-- run's vector. Calculations keep their inputs so anyone can recompute the published level.

create table market_index_runs (
  id uuid primary key,
  marketplace text not null,
  methodology text not null,
  -- The ingest run whose prices this run read; a second job for the same run is a no-op.
  ingest_run_id uuid not null references ingest_runs (id),
  -- The instant the prices are judged fresh at: the ingest run's ingestion time (t).
  as_of timestamptz not null,
  previous_run_id uuid references market_index_runs (id),
  calculated_at timestamptz not null,
  priced_count integer not null,
  duration_ms integer not null,
  unique (marketplace, methodology, ingest_run_id)
);
create index market_index_runs_latest_idx on market_index_runs (marketplace, methodology, as_of desc);

-- Every fresh price of the marketplace at the run, with the item's segment attributes as they were
-- (the constituents of a calculation are the rows of its segment with a previous price).
create table market_index_prices (
  index_run_id uuid not null references market_index_runs (id) on delete cascade,
  catalog_id text not null,
  version text not null,
  type text not null,
  weapon text,
  rarity text,
  exterior text,
  -- The price at the previous run when the item was priced fresh then too; null otherwise.
  previous_price numeric,
  current_price numeric not null,
  primary key (index_run_id, catalog_id, version)
);

create table market_index_calculations (
  id uuid primary key,
  index_run_id uuid not null references market_index_runs (id) on delete cascade,
  marketplace text not null,
  methodology text not null,
  -- '' and '' for the whole market; otherwise a segment (type, weapon, rarity, exterior) and its exact value.
  segment text not null,
  value text not null,
  status text not null check (status in ('succeeded', 'failed')),
  failure_reason text,
  -- A segment's first successful calculation: level 1000, no link; its constituents are its base prices.
  inception boolean not null default false,
  level numeric,
  previous_level numeric,
  link_factor numeric,
  previous_calculation_id uuid references market_index_calculations (id),
  constituent_count integer not null,
  as_of timestamptz not null,
  calculated_at timestamptz not null,
  check (status = 'failed' or level is not null)
);
create index market_index_calculations_series_idx
  on market_index_calculations (marketplace, methodology, segment, value, as_of, id) where status = 'succeeded';
create index market_index_calculations_run_idx on market_index_calculations (index_run_id);

-- The newest successful calculation per query: what GET /v2/market-index/cs2 answers and what the
-- next calculation links to. A failed calculation never replaces it.
create table market_index_latest (
  marketplace text not null,
  methodology text not null,
  segment text not null,
  value text not null,
  calculation_id uuid not null references market_index_calculations (id),
  level numeric not null,
  as_of timestamptz not null,
  primary key (marketplace, methodology, segment, value)
);
