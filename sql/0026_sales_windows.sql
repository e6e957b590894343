-- Issue 32 (docs/decisions.md "Sales windows"): what items sold for, beside what they are listed at.
-- Each source that publishes sales (skinport's sales history: 24 h, 7, 30 and 90 days; steam's
-- priceoverview: 24 h) gives per item, version and window a median, mean, min, max (decimal USD, null
-- where the source does not say or nothing sold) and the number sold. The latest window of each source
-- is kept in source_sales, every change of it in sales_observations (the history), and the windows
-- combined over sources in item_sales, recomputed in the write that changes one of its inputs: readers
-- read item_sales, they never combine.

create table source_sales (
  catalog_id text not null references catalog_items (catalog_id) on delete cascade,
  version text not null,
  source text not null,
  sales_window text not null check (sales_window in ('24h', '7d', '30d', '90d')),
  median numeric check (median > 0),
  mean numeric check (mean > 0),
  min numeric check (min > 0),
  max numeric check (max > 0),
  volume integer not null check (volume >= 0),
  source_time timestamptz not null,
  ingested_at timestamptz not null,
  run_id text not null,
  primary key (catalog_id, version, sales_window, source)
);

create table sales_observations (
  catalog_id text not null,
  version text not null,
  source text not null,
  sales_window text not null,
  median numeric,
  mean numeric,
  min numeric,
  max numeric,
  volume integer not null,
  source_time timestamptz not null,
  ingested_at timestamptz not null,
  run_id text not null
) partition by range (ingested_at);
create index sales_observations_item on sales_observations (catalog_id, version, sales_window, ingested_at);
-- A partition a day, made ahead and dropped past RETENTION_OBSERVATIONS_DAYS like price_observations'
-- (shared/retention/partitions.ts); rows no partition covers yet land here.
create table sales_observations_default partition of sales_observations default;

create table item_sales (
  catalog_id text not null references catalog_items (catalog_id) on delete cascade,
  version text not null,
  sales_window text not null check (sales_window in ('24h', '7d', '30d', '90d')),
  -- Volume-weighted median of the sources' medians; volume-weighted mean of their means (4 places,
  -- half-even); min and max over the sources that publish them. Null when nothing sold.
  median numeric,
  mean numeric,
  min numeric,
  max numeric,
  volume integer not null,
  sources text[] not null,
  updated_at timestamptz not null,
  primary key (catalog_id, version, sales_window)
);

-- Each sales reader's health, as price_sources is each price source's: the skinport sales history
-- reader, and steam's priceoverview (read within the steam source's run).
create table sales_readers (
  name text primary key,
  last_success_at timestamptz,
  last_attempt_at timestamptz,
  last_error text,
  last_error_at timestamptz,
  last_run_id text,
  last_rows_written integer not null default 0,
  last_rows_skipped integer not null default 0,
  last_unknown_names integer not null default 0,
  consecutive_failures integer not null default 0
);

-- x rounded to `places` decimals, ties to the even neighbour (Postgres's round() takes ties away from zero).
create function round_half_even(x numeric, places integer) returns numeric
language sql immutable strict parallel safe as $$
  select case
    when abs(x * power(10::numeric, places) - trunc(x * power(10::numeric, places))) = 0.5
         and mod(trunc(x * power(10::numeric, places)), 2) = 0
      then round(trunc(x * power(10::numeric, places)) / power(10::numeric, places), places)
    else round(x, places)
  end
$$;

-- A computed decimal as the text prices are written in: no trailing zeros beyond two decimals ("12.30", "1.015").
create function money_scale(x numeric) returns numeric
language sql immutable strict parallel safe as $$
  select case when scale(trim_scale(x)) < 2 then round(x, 2) else trim_scale(x) end
$$;
