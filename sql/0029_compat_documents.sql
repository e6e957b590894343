-- Issue 33 (docs/design.md §20; docs/compat/): the drop-in formats' documents, built once per keyless price
-- snapshot from the same prices (shared/compat/store.ts) and deleted with it. Each is the JSON a
-- format's handler answers from (shared/compat/<format>.ts); requests derive their answers from it.
create table compat_documents (
  snapshot_id bigint not null references price_snapshots (id) on delete cascade,
  name text not null,
  body bytea not null,
  -- The oldest source time among the prices the document used (`X-Source-Age`).
  oldest_source_at timestamptz,
  built_at timestamptz not null,
  build_ms integer not null,
  primary key (snapshot_id, name)
);
-- Megabytes of JSON per document, written once and read whole: stored out of line without pglz, whose
-- compression cost the build several hundred ms a snapshot (API processes compress what they serve).
alter table compat_documents alter column body set storage external;
