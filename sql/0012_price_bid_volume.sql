-- Issue 19 / docs/design.md §13: each source's price carries the highest buy order (`bid`, null where the
-- source publishes none) and its sales in 7 days (`volume_7d`), stored with the observation and the
-- latest price. Nullable without a default: adding them rewrites no row.
alter table price_observations add column bid numeric, add column volume_7d integer;
alter table latest_prices add column bid numeric, add column volume_7d integer;
