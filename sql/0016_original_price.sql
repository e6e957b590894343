-- Issue 20 / docs/design.md §14: skinbaron prices in EUR. Its prices are stored in USD (price, at the newest
-- ECB rates, rounded half-even to cents) like every other source's, and the EUR price it wrote is
-- kept beside them, exactly (`numeric`, as written), for the `original: {price, currency}` of its
-- source entries; never converted again. Null for the sources that price in USD. Nullable without a
-- default: adding them rewrites no row. The two are set together or not at all.
alter table price_observations add column original_price numeric, add column original_currency text;
alter table latest_prices
  add column original_price numeric,
  add column original_currency text check (original_currency ~ '^[A-Z]{3}$'),
  add constraint latest_prices_original_check check ((original_price is null) = (original_currency is null));

-- current_prices (sql/0013) exposes them; `create or replace` may only append columns, which is all
-- this does, so nothing that reads the view changes.
create or replace view current_prices as
select l.catalog_id, l.source, l.version, l.price, l.median_price, l.bid, l.volume_7d, l.quantity,
       case when l.listed and s.listed_at > l.source_time then s.listed_at else l.source_time end as source_time,
       l.ingested_at, l.run_id, l.listed, l.original_price, l.original_currency
from latest_prices l
left join price_sources s on s.name = l.source;
