-- New items priced the day they appear (docs/design.md §19; docs/decisions.md "Catalog"). A market_hash_name
-- an upstream lists but the catalog lacks is recorded per source; one seen on two sources (or on
-- steam) is parsed (shared/catalog/market-name-parser.ts) and, when it parses unambiguously, becomes a
-- catalog item marked provisional until a catalog sync generates the same catalog_id.
alter table catalog_items add column provisional boolean not null default false;
-- Few rows: counted by /v2/status and /metrics, kept by a catalog sync.
create index catalog_items_provisional_idx on catalog_items (catalog_id) where provisional;

-- Per name and source: when the source first and last listed a name the catalog did not have.
create table unknown_item_sightings (
  market_hash_name text not null,
  source text not null,
  first_seen_at timestamptz not null,
  -- Refreshed at most every 10 minutes (a source lists the same unknown names on every run).
  last_seen_at timestamptz not null,
  primary key (market_hash_name, source)
);

-- Names seen on two sources (or steam) that do not parse into one item: counted and listed, never
-- dropped. A name leaves the count once the catalog has it (a later parser or a catalog sync).
create table unparsed_item_names (
  market_hash_name text primary key,
  -- `unrecognised` or `ambiguous`, and why (shared/catalog/market-name-parser.ts).
  status text not null check (status in ('unrecognised', 'ambiguous')),
  reason text not null,
  first_seen_at timestamptz not null,
  last_seen_at timestamptz not null
);
create index unparsed_item_names_newest_idx on unparsed_item_names (first_seen_at desc, market_hash_name);
