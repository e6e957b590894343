-- Inventory watch (docs/design.md §15): while a workspace has a live webhook endpoint subscribed to
-- inventory.changed or item.tradable, the maintenance pool re-reads each of its connected accounts'
-- inventories every INVENTORY_WATCH_INTERVAL_SECONDS (within one global Steam request budget, oldest
-- snapshot first) and diffs each new snapshot with the watch's previous one by asset id.

-- One watch per live connected account of a subscribed workspace; deleted when the account is
-- disconnected or the workspace's subscription ends (a later one starts again from a new baseline).
create table inventory_watches (
  account_id bigint primary key references gameplatform_accounts (account_id) on delete cascade,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  steam_id text not null check (steam_id ~ '^[0-9]{17}$'),
  created_at timestamptz not null,
  -- The last good snapshot (inventory_snapshots): the next read's baseline. Null until the first
  -- read succeeds; a failed read never moves it.
  snapshot_id uuid references inventory_snapshots (id) on delete set null,
  -- The snapshot before it (the previous_snapshot_id of the last inventory.changed). The one before
  -- that is deleted when a new snapshot is stored: a watch keeps at most two snapshots.
  previous_snapshot_id uuid references inventory_snapshots (id) on delete set null,
  -- When snapshot_id was fetched ("oldest snapshot first": never read sorts first).
  read_at timestamptz,
  -- Due from then on (a read, good or failed, sets it one interval after its start).
  next_read_at timestamptz not null,
  -- A process reading this watch holds it until claimed_until (a lease: a dead reader's claim lapses).
  claim_token uuid,
  claimed_until timestamptz,
  -- Failed reads since the last good one, and the last failure's reason (Steam 5xx, 429, private, …).
  failures integer not null default 0,
  last_error text,
  last_attempt_at timestamptz
);
create index inventory_watches_due_idx on inventory_watches (read_at asc nulls first, account_id);
create index inventory_watches_workspace_idx on inventory_watches (workspace_id);

-- item.tradable sent per account and asset: the final guard against a second event when a delayed
-- job runs twice (BullMQ's job id is the first). Pruned by the maintenance cleanup after 30 days.
create table inventory_tradable_events (
  account_id bigint not null references gameplatform_accounts (account_id) on delete cascade,
  asset_id text not null,
  tradable_at timestamptz not null,
  sent_at timestamptz not null,
  primary key (account_id, asset_id)
);
create index inventory_tradable_events_sent_idx on inventory_tradable_events (sent_at);
