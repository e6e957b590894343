-- Owner-token inventory reads (issue 30, docs/design.md §17; docs/decisions.md "Trade protection and reversals").
--
-- A snapshot read with an account's owner token shows what only the token could see (context 16:
-- trade-protected items and Community Market listings), so it belongs to the workspace whose token
-- read it: workspace_id is that workspace, and only its reads find the snapshot. The public read
-- (no token) keeps workspace_id null and is shared by every workspace, as before. Deleting the
-- workspace deletes its snapshots.
alter table inventory_snapshots
  add column workspace_id uuid references workspaces (id) on delete cascade,
  -- The Steam inventory contexts the snapshot holds: {2} for the public read, {2,16} with a token.
  add column contexts smallint[] not null default '{2}';

-- The latest snapshot of one scope (public: workspace_id is null) by steam id.
drop index inventory_snapshots_latest_idx;
create index inventory_snapshots_latest_idx on inventory_snapshots (steam_id, (coalesce(workspace_id::text, '')), fetched_at desc, id desc);
create index inventory_snapshots_workspace_idx on inventory_snapshots (workspace_id) where workspace_id is not null;

-- item.protection_ended (docs/design.md §17), like item.tradable: sent once per account and asset, when the
-- asset's protection instant has passed and it is still in the watch's latest snapshot.
create table inventory_protection_events (
  account_id bigint not null references gameplatform_accounts (account_id) on delete cascade,
  asset_id text not null,
  protected_until timestamptz not null,
  sent_at timestamptz not null,
  primary key (account_id, asset_id)
);
create index inventory_protection_events_sent_idx on inventory_protection_events (sent_at);
