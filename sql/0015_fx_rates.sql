-- Issue 20 / docs/design.md §14: exchange rates. The `fx` source reads the ECB's daily reference rates
-- (units of a currency per 1 EUR) and keeps one set per ECB date: a later file for the same date
-- replaces that date's whole set (a currency it no longer lists goes with it). Rates are `numeric`,
-- exactly as the ECB wrote them ("1.0834", never a float). Conversions use the newest date. A set is
-- ~30 rows a working day (~8 000 a year), so nothing is pruned.
create table fx_rate_days (
  as_of date primary key,
  -- When the file holding this date's set was fetched.
  fetched_at timestamptz not null
);

create table fx_rates (
  as_of date not null references fx_rate_days (as_of) on delete cascade,
  currency text not null check (currency ~ '^[A-Z]{3}$' and currency <> 'EUR'),
  rate numeric not null check (rate > 0),
  primary key (as_of, currency)
);

-- The fx source's health, as price_sources is for the marketplaces: one row per upstream ('ecb').
-- A failed or malformed fetch records its error here and leaves the stored rates alone.
create table fx_sources (
  name text primary key,
  last_success_at timestamptz,
  last_attempt_at timestamptz,
  last_error text,
  last_error_at timestamptz,
  -- Rate entries skipped as malformed in the last successful fetch.
  last_rows_skipped integer,
  consecutive_failures integer not null default 0
);
