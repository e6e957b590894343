-- Trade intents' assets (docs/design.md §18 "Where it appears: … trade intents' assets"; docs/decisions.md
-- "Trade intents' assets"): what the asset check at creation read from each asset's inventory record, one
-- entry per asset, give side first then receive, in the order of `give` and `receive`:
-- {asset_id, side: "give" | "receive", market_hash_name, catalog_id, image: {url, source} | null}.
-- Kept as the record showed the asset when the draft was made (snapshots are immutable, and a draft
-- is about those items as they were checked). Intents made before this migration keep '[]' here and
-- are served one entry per id of give and receive with null name, catalog id and image (the snapshot
-- that was checked may be gone, and the ids are all that was kept). A constant default: no rewrite.
alter table trade_intents add column assets jsonb not null default '[]';
