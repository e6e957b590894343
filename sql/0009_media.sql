-- Media (docs/design.md §10): scenes with immutable revisions, viewer sessions, renders.

create table scenes (
  scene_id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  latest_revision integer not null check (latest_revision >= 1),
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create index scenes_list_idx on scenes (workspace_id, created_at desc, scene_id desc);

-- Every revision as answered (the scene document), never updated once written.
create table scene_revisions (
  scene_id uuid not null references scenes (scene_id) on delete cascade,
  revision integer not null check (revision >= 1),
  document jsonb not null,
  -- Quoted lowercase hex SHA-256 of the RFC 8785 canonical JSON of the document (docs/design.md §10).
  etag text not null,
  created_at timestamptz not null,
  primary key (scene_id, revision)
);

-- Viewer sessions: the URL carries a random token; only its SHA-256 is stored.
create table viewer_sessions (
  session_id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  token_hash text not null unique,
  scene_id uuid not null,
  scene_revision integer not null,
  item jsonb not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  foreign key (scene_id, scene_revision) references scene_revisions (scene_id, revision)
);
create index viewer_sessions_expiry_idx on viewer_sessions (expires_at);

create table renders (
  render_id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  state text not null check (state in ('queued', 'rendering', 'succeeded', 'failed')),
  item jsonb not null,
  scene_id uuid not null,
  scene_revision integer not null,
  scene_etag text not null,
  output jsonb not null,
  -- SHA-256 of the canonical JSON of (item, scene revision, output): an identical live request is
  -- answered with the existing render (docs/design.md §10).
  request_key text not null,
  attempts integer not null default 0,
  lease_token uuid,
  lease_until timestamptz,
  blob_key text,
  bytes integer,
  sha256 text,
  error_code text,
  error_message text,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  completed_at timestamptz,
  foreign key (scene_id, scene_revision) references scene_revisions (scene_id, revision)
);
create unique index renders_live_request_idx on renders (workspace_id, request_key) where state in ('queued', 'rendering', 'succeeded');
create index renders_list_idx on renders (workspace_id, created_at desc, render_id desc);
create index renders_pending_idx on renders (state, updated_at) where state in ('queued', 'rendering');
