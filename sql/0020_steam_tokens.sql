-- Owner access tokens of connected accounts (issue 30, docs/design.md §17): at most one per account, sealed
-- with AES-256-GCM under WEBHOOK_SECRET_KEY (shared/webhooks/secrets.ts; the account id is the
-- associated data, so a ciphertext copied onto another account's row does not open).
--
-- A table of its own rather than columns on gameplatform_accounts: no query that lists or returns
-- accounts can select the ciphertext by accident, and deleting the row destroys the token. A
-- disconnect deletes it (accounts are kept, disconnected_at set); deleting a workspace cascades
-- through its accounts to here.
create table gameplatform_steam_tokens (
  account_id bigint primary key references gameplatform_accounts (account_id) on delete cascade,
  -- iv ‖ tag ‖ ciphertext, and the id of the key that sealed it (rotation).
  ciphertext bytea not null,
  key_id text not null,
  -- The JWT's exp: past it the token is dead and readers drop it.
  expires_at timestamptz not null,
  created_at timestamptz not null,
  updated_at timestamptz not null
);
