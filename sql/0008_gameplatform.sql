-- Game platform (docs/design.md §11): cached Steam profiles, inventory snapshots with one row per asset,
-- connected accounts through Steam OpenID, and trade intents whose outgoing assets are reserved.

-- GetPlayerSummaries answers, one per SteamID64, refreshed after PROFILE_TTL_SECONDS.
create table steam_profiles (
  steam_id text primary key check (steam_id ~ '^[0-9]{17}$'),
  -- The normalised profile fields (persona_name, profile_url, avatar_url, visibility, …).
  profile jsonb not null,
  fetched_at timestamptz not null
);

-- One fetch of a whole inventory (every upstream page), immutable once written: pages of one
-- snapshot never mix two fetches.
create table inventory_snapshots (
  id uuid primary key,
  steam_id text not null check (steam_id ~ '^[0-9]{17}$'),
  fetched_at timestamptz not null,
  total_assets integer not null check (total_assets >= 0),
  -- Pages the upstream reported beyond what was fetched (a partial snapshot is never stored).
  upstream_total integer
);
create index inventory_snapshots_latest_idx on inventory_snapshots (steam_id, fetched_at desc, id desc);

create table inventory_assets (
  snapshot_id uuid not null references inventory_snapshots (id) on delete cascade,
  -- Upstream order, 0-based: our cursor pages by it.
  position integer not null,
  asset_id text not null,
  tradable boolean not null,
  catalog_id text,
  -- The normalised asset without its valuation (value is added when read, from current prices).
  record jsonb not null,
  primary key (snapshot_id, position)
);
create index inventory_assets_asset_idx on inventory_assets (snapshot_id, asset_id);

-- OpenID 2.0 connect flows in progress: `state` is single-use and expires.
create table openid_states (
  state text primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  actor jsonb not null,
  request_id text,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  used_at timestamptz
);

-- Response nonces the provider signed, kept past their useful life so a replay is refused.
create table openid_nonces (
  nonce text primary key,
  seen_at timestamptz not null
);

create table gameplatform_accounts (
  account_id bigint generated always as identity primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  steam_id text not null check (steam_id ~ '^[0-9]{17}$'),
  persona_name text,
  connected_at timestamptz not null,
  disconnected_at timestamptz
);
-- One live connection of a Steam account per workspace.
create unique index gameplatform_accounts_live_idx on gameplatform_accounts (workspace_id, steam_id) where disconnected_at is null;
create index gameplatform_accounts_list_idx on gameplatform_accounts (workspace_id, account_id) where disconnected_at is null;

create table trade_intents (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  account_id bigint not null references gameplatform_accounts (account_id),
  kind text not null check (kind in ('create_offer', 'accept_offer')),
  state text not null check (state in ('draft', 'cancelled', 'expired')),
  external_reference text not null check (length(external_reference) between 1 and 128),
  message text,
  partner_steam_id text,
  give text[] not null default '{}',
  receive text[] not null default '{}',
  target_trade_id uuid references trade_intents (id),
  valuation jsonb not null,
  expires_at timestamptz not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
-- docs/design.md §11: external_reference_conflict within a workspace.
create unique index trade_intents_reference_idx on trade_intents (workspace_id, external_reference);
-- docs/design.md §11: one active acceptance per target offer.
create unique index trade_intents_target_idx on trade_intents (target_trade_id) where kind = 'accept_offer' and state = 'draft';
create index trade_intents_list_idx on trade_intents (workspace_id, created_at desc, id desc);
create index trade_intents_expiry_idx on trade_intents (expires_at) where state = 'draft';

-- One row per outgoing asset of a draft; released on cancel and expiry.
create table trade_reservations (
  intent_id uuid not null references trade_intents (id) on delete cascade,
  steam_id text not null,
  asset_id text not null,
  expires_at timestamptz not null,
  released_at timestamptz,
  primary key (intent_id, asset_id)
);
-- An asset can be held by one active reservation only: concurrent drafts cannot double-book it.
create unique index trade_reservations_active_idx on trade_reservations (steam_id, asset_id) where released_at is null;
