-- Item images (issue 31, docs/design.md §18; docs/decisions.md "Item images"): every Steam inventory
-- description carries an `icon_url`, the image Steam shows the item with. Each stored inventory
-- snapshot records the icons it saw, per market_hash_name and price version (the paint index decides
-- the version of a Doppler phase, as for valuation), with when each was first and last seen. An
-- item's image is the icon first seen most recently for its name and version (an icon Valve
-- replaced stops being the newest the day the new one is first read), else cs2-lib's image.
create table item_icons (
  market_hash_name text not null,
  -- `default` or a phase (shared/gameplatform/valuation.ts priceVersionOf).
  version text not null,
  -- Steam's icon_url: the path segment after /economy/image/ on Steam's icon CDN.
  icon_url text not null check (icon_url ~ '^[A-Za-z0-9_-]+$' and length(icon_url) <= 1024),
  first_seen_at timestamptz not null,
  -- Refreshed at most once an hour per icon (snapshots of shared icons do not all write the row).
  last_seen_at timestamptz not null,
  primary key (market_hash_name, version, icon_url)
);

-- The newest icon of a name and version: one index scan.
create index item_icons_newest on item_icons (market_hash_name, version, first_seen_at desc, last_seen_at desc) include (icon_url);
