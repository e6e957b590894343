-- Platform core: workspaces, accounts, sessions, API keys, sign-in limits, idempotency, audit, heartbeats.

create table workspaces (
  id uuid primary key,
  name text not null check (length(name) between 1 and 120),
  tier text not null default 'free' check (tier in ('free', 'pro', 'enterprise')),
  -- Custom budgets (enterprise, or overrides); null means the tier's default.
  minute_budget integer check (minute_budget is null or minute_budget > 0),
  day_budget integer check (day_budget is null or day_budget > 0),
  suspended_at timestamptz,
  created_at timestamptz not null default now()
);

create table accounts (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id),
  email text not null,
  password_hash text not null,
  created_at timestamptz not null default now()
);
create unique index accounts_email_key on accounts (lower(email));

create table sessions (
  id uuid primary key,
  account_id uuid not null references accounts (id),
  token_hash text not null unique,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  revoked_at timestamptz
);
create index sessions_expires_at_idx on sessions (expires_at);

create table api_keys (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id),
  created_by_account_id uuid references accounts (id),
  label text not null check (length(label) between 1 and 80),
  prefix text not null,
  key_hash text not null unique,
  scopes text[] not null,
  created_at timestamptz not null default now(),
  revoked_at timestamptz
);
create index api_keys_workspace_idx on api_keys (workspace_id, created_at desc, id desc);

-- Failed sign-ins, per subject ("email:<sha256>" or "ip:<address>"), for the sign-in limiter.
create table sign_in_failures (
  id bigint generated always as identity primary key,
  subject text not null,
  failed_at timestamptz not null default now()
);
create index sign_in_failures_subject_idx on sign_in_failures (subject, failed_at);

-- The client's Idempotency-Key is kept only as its SHA-256 (key_digest), and the stored response is
-- sealed (AES-256-GCM) under a key derived from it: responses may carry secrets such as a new API key.
create table idempotency_records (
  workspace_id uuid not null,
  operation text not null,
  key_digest text not null,
  fingerprint text not null,
  state text not null check (state in ('in_flight', 'completed')),
  response_status integer,
  response_sealed bytea,
  -- An in-flight record whose owner died is taken over after this time.
  locked_until timestamptz not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  primary key (workspace_id, operation, key_digest)
);
create index idempotency_records_expires_at_idx on idempotency_records (expires_at);

create table audit_events (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id),
  occurred_at timestamptz not null,
  source text not null check (source in ('platform', 'gameplatform')),
  event_type text not null check (event_type ~ '^[a-z][a-z0-9_.-]{1,79}$'),
  resource_type text not null check (resource_type ~ '^[a-z][a-z0-9_.-]{1,79}$'),
  resource_id text,
  outcome text not null check (outcome in ('accepted', 'rejected', 'succeeded', 'failed', 'recorded')),
  actor_type text not null,
  actor_id text,
  request_id text,
  metadata jsonb not null default '{}'::jsonb
);
create index audit_events_listing_idx on audit_events (workspace_id, occurred_at desc, id desc);

create table worker_heartbeats (
  worker_id text primary key,
  pool text not null,
  hostname text not null,
  pid integer not null,
  started_at timestamptz not null,
  last_seen_at timestamptz not null
);

-- Price sources' freshness, read by GET /health; the ingest pool (a later migration's tables) keeps it current.
create table price_sources (
  name text primary key,
  last_success_at timestamptz,
  last_attempt_at timestamptz,
  last_error text,
  stale_after_seconds integer not null default 600 check (stale_after_seconds > 0)
);
