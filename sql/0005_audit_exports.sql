-- Audit export jobs (docs/interface.md §2.3, docs/design.md §7): the row is the system of record; BullMQ only wakes a worker.
-- A worker holds a job by its lease (lease_token + leased_until, renewed by heartbeat); a lease that
-- runs out returns the job to `queued` until `attempts` reaches the cap, then the job is `failed`.
create table audit_exports (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  state text not null check (state in ('queued', 'leased', 'completed', 'failed')),
  range_from timestamptz not null,
  range_to timestamptz not null,
  requested_by_type text not null,
  requested_by_id text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  -- Leases taken so far (each one is an attempt).
  attempts integer not null default 0 check (attempts >= 0),
  lease_token uuid,
  -- Who holds the lease (hostname:pid), for operators; never shown to clients.
  leased_by text,
  leased_until timestamptz,
  completed_at timestamptz,
  failed_at timestamptz,
  event_count bigint check (event_count >= 0),
  bytes bigint check (bytes >= 0),
  sha256 text check (sha256 ~ '^[0-9a-f]{64}$'),
  -- Path of the finished file under BLOB_DIR; null before completion and once the file is deleted.
  blob_key text,
  expires_at timestamptz,
  file_deleted_at timestamptz,
  failure_reason text,
  check (range_from < range_to),
  check ((state = 'leased') = (lease_token is not null and leased_until is not null)),
  check (state <> 'completed' or (completed_at is not null and event_count is not null and bytes is not null
                                  and sha256 is not null and expires_at is not null)),
  check (state <> 'failed' or (failed_at is not null and failure_reason is not null))
);
-- Listing, newest first, with and without the state filter.
create index audit_exports_listing_idx on audit_exports (workspace_id, created_at desc, id desc);
create index audit_exports_state_listing_idx on audit_exports (workspace_id, state, created_at desc, id desc);
-- The sweeper: unfinished jobs, and completed files past their retention.
create index audit_exports_unfinished_idx on audit_exports (state, leased_until) where state in ('queued', 'leased');
create index audit_exports_retention_idx on audit_exports (expires_at) where blob_key is not null;
