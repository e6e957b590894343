-- Trade history and reversals of connected accounts (issue 30, docs/design.md §17): for every live account
-- with a live owner token whose workspace subscribes to trade.reversed or item.protection_ended, the
-- maintenance pool reads Steam's GetTradeHistory every TRADE_HISTORY_INTERVAL_SECONDS and stores
-- each trade once, its status updated in place; a trade whose status becomes 12
-- (TradeProtectionRollback) is joined to its return trade (`rollback_trade` = its id) and recorded
-- as a reversal once, which is when trade.reversed goes to the outbox.
--
-- Every row belongs to an account: deleting a workspace cascades through its accounts to here, and
-- disconnecting an account deletes its trades, reversals and poll in the disconnect's transaction
-- (what only the owner's token could read goes with the token).

-- One row per account and Steam trade, as the account's own history shows it.
create table gameplatform_trades (
  account_id bigint not null references gameplatform_accounts (account_id) on delete cascade,
  -- Steam's tradeid (a 64-bit number, kept as its decimal text).
  trade_id text not null check (trade_id ~ '^[0-9]{1,20}$'),
  workspace_id uuid not null references workspaces (id) on delete cascade,
  -- steamid_other.
  counterparty_steam_id text not null check (counterparty_steam_id ~ '^[0-9]{17}$'),
  -- Steam's ETradeStatus (2 Committed, 3 Complete, 4 Failed, 12 TradeProtectionRollback, …), updated in place.
  status smallint not null check (status between 0 and 255),
  initiated_at timestamptz not null,
  escrow_ends_at timestamptz,
  settled_at timestamptz,
  -- On a return trade: the trade it reverses (Steam's rollback_trade).
  rollback_trade_id text check (rollback_trade_id ~ '^[0-9]{1,20}$'),
  -- [{appid, contextid, assetid, amount, classid, instanceid, new_assetid, new_contextid}] as Steam sends them.
  assets_given jsonb not null default '[]',
  assets_received jsonb not null default '[]',
  -- When this trade was reversed: its return trade's time_init, or when status 12 was first read.
  reversed_at timestamptz,
  first_seen_at timestamptz not null,
  updated_at timestamptz not null,
  primary key (account_id, trade_id)
);
-- GET …/accounts/{id}/trades: newest first, keyset on (initiated_at, trade_id), optionally by status.
create index gameplatform_trades_list_idx on gameplatform_trades (account_id, initiated_at desc, trade_id desc);
create index gameplatform_trades_status_idx on gameplatform_trades (account_id, status, initiated_at desc, trade_id desc);
-- GET /v2/gameplatform/counterparties/{id} and trade intents' risk: one workspace's trades with one SteamID.
create index gameplatform_trades_counterparty_idx on gameplatform_trades (workspace_id, counterparty_steam_id);
-- The join from a reversed trade to its return trade.
create index gameplatform_trades_rollback_idx on gameplatform_trades (account_id, rollback_trade_id) where rollback_trade_id is not null;

-- A reversal, recorded once per account and reversed trade: its primary key is what makes
-- trade.reversed go out exactly once, however many reads (or processes) see status 12.
create table gameplatform_trade_reversals (
  account_id bigint not null,
  trade_id text not null,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  rollback_trade_id text,
  counterparty_steam_id text not null,
  reversed_at timestamptz not null,
  -- The trade.reversed outbox event; null when none was sent (the workspace did not subscribe to it,
  -- or the reversal happened before the account's trade history was first polled).
  event_id uuid,
  recorded_at timestamptz not null,
  primary key (account_id, trade_id),
  foreign key (account_id, trade_id) references gameplatform_trades (account_id, trade_id) on delete cascade
);

-- One poll per live account with a stored token whose workspace subscribes to trade.reversed or
-- item.protection_ended; ended (deleted) when any of that stops. Claimed like inventory watches.
create table gameplatform_trade_polls (
  account_id bigint primary key references gameplatform_accounts (account_id) on delete cascade,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  steam_id text not null check (steam_id ~ '^[0-9]{17}$'),
  -- Reversals from this instant on are announced; earlier ones found by the first read are stored only.
  created_at timestamptz not null,
  next_read_at timestamptz not null,
  read_at timestamptz,
  claim_token uuid,
  claimed_until timestamptz,
  failures integer not null default 0,
  last_error text,
  last_attempt_at timestamptz
);
create index gameplatform_trade_polls_due_idx on gameplatform_trade_polls (next_read_at, account_id);
