-- Issue 19: sources whose one body lists the whole market without per-row times (docs/design.md §13's six
-- marketplaces) confirm every listed price on every run. Writing a new source_time into each of
-- ~30 000 latest prices per run only to say "still there" made a steady run cost ~1 s; instead a run
-- records the confirmation once, on its source (price_sources.listed_at), and marks only the rows
-- that left the listing (latest_prices.listed = false). current_prices is latest_prices as readers
-- see it: a listed row of such a source was observed at least at its source's last listing.
alter table latest_prices add column listed boolean not null default true;
alter table price_sources add column listed_at timestamptz;

create view current_prices as
select l.catalog_id, l.source, l.version, l.price, l.median_price, l.bid, l.volume_7d, l.quantity,
       case when l.listed and s.listed_at > l.source_time then s.listed_at else l.source_time end as source_time,
       l.ingested_at, l.run_id, l.listed
from latest_prices l
left join price_sources s on s.name = l.source;
