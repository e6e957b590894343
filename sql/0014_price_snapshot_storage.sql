-- Issue 19, idle cost: a snapshot body (~28 MB of JSON with nine sources) was compressed by
-- Postgres (pglz, the default `extended` storage) on every build and decompressed on every load:
-- ~0.8 s of a Postgres backend per build, whether or not anyone downloads the list. API processes
-- compress the list themselves (brotli, gzip), so it is stored as it is: `external` keeps it out of
-- line (TOAST) without compressing it. Three snapshots are kept, so the disk cost is small.
alter table price_snapshots
  alter column body set storage external,
  alter column body_gzip set storage external,
  alter column body_br set storage external;
