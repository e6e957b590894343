-- The keyless list is stored uncompressed (issue 13, idle cost): compressing ~13 MB twice per build
-- cost ~0.4 s of CPU whether or not anyone downloaded it. API processes compress a snapshot when
-- they first serve it; snapshots built before keep their encodings.
alter table price_snapshots
  alter column body_gzip drop not null,
  alter column body_br drop not null;
