-- Webhooks (docs/design.md §8): endpoints with encrypted signing secrets, one delivery per (event, endpoint)
-- fanned out from event_outbox, and every attempt of each delivery.

create table webhook_endpoints (
  id uuid primary key,
  workspace_id uuid not null references workspaces (id) on delete cascade,
  url text not null check (length(url) <= 2048),
  description text check (description is null or length(description) <= 500),
  event_types text[] not null check (cardinality(event_types) > 0),
  -- AES-256-GCM (iv ‖ tag ‖ ciphertext, the endpoint id as associated data) under the key that
  -- secret_key_id names. Both are cleared when the endpoint is deleted: its secret is gone for good.
  secret_ciphertext bytea,
  secret_key_id text,
  created_at timestamptz not null,
  -- Set when the receiver answered 410 Gone: no further deliveries until it is recreated.
  disabled_at timestamptz,
  disabled_reason text,
  deleted_at timestamptz,
  check ((secret_ciphertext is null) = (secret_key_id is null)),
  check (deleted_at is not null or secret_ciphertext is not null)
);
create index webhook_endpoints_workspace_idx on webhook_endpoints (workspace_id, created_at desc, id desc) where deleted_at is null;
-- The dispatcher's fan-out: live endpoints by subscribed event type.
create index webhook_endpoints_live_types_idx on webhook_endpoints using gin (event_types)
  where deleted_at is null and disabled_at is null;

create table webhook_deliveries (
  id uuid primary key,
  endpoint_id uuid not null references webhook_endpoints (id) on delete cascade,
  event_id uuid not null references event_outbox (id) on delete cascade,
  -- pending → delivering (leased by one worker) → succeeded | failed | back to pending for a retry;
  -- cancelled when the endpoint was deleted or disabled before the delivery went out.
  state text not null check (state in ('pending', 'delivering', 'succeeded', 'failed', 'cancelled')),
  -- Attempts started so far (an attempt interrupted by a dying worker counts).
  attempt_count integer not null default 0,
  -- When the next attempt is due (pending only).
  next_attempt_at timestamptz,
  -- While delivering: when the current attempt began, and when its worker is presumed dead.
  attempt_started_at timestamptz,
  lease_until timestamptz,
  last_response_status integer,
  last_error text,
  created_at timestamptz not null,
  settled_at timestamptz,
  unique (endpoint_id, event_id)
);
create index webhook_deliveries_endpoint_idx on webhook_deliveries (endpoint_id, created_at desc, id desc);
create index webhook_deliveries_event_idx on webhook_deliveries (event_id);
-- The sweeper's view: deliveries still to make, by due time.
create index webhook_deliveries_due_idx on webhook_deliveries (next_attempt_at) where state = 'pending';
create index webhook_deliveries_lease_idx on webhook_deliveries (lease_until) where state = 'delivering';
create index webhook_deliveries_settled_idx on webhook_deliveries (settled_at) where settled_at is not null;

create table webhook_delivery_attempts (
  id bigint generated always as identity primary key,
  delivery_id uuid not null references webhook_deliveries (id) on delete cascade,
  attempt integer not null check (attempt > 0),
  started_at timestamptz not null,
  duration_ms integer,
  outcome text not null check (outcome in ('succeeded', 'failed', 'interrupted')),
  response_status integer,
  error text check (error is null or length(error) <= 500),
  -- The retry this attempt scheduled; null when none follows.
  next_attempt_at timestamptz
);
create index webhook_delivery_attempts_delivery_idx on webhook_delivery_attempts (delivery_id, id);

-- Events written before webhooks existed have no subscriber (no endpoint is older than this
-- migration): mark them published so the dispatcher starts from an empty backlog, not a replay.
update event_outbox set published_at = now() where published_at is null;

-- Wakes the webhooks pool's dispatcher as soon as outbox rows commit (NOTIFY is delivered on commit,
-- once per transaction and channel), so price.updated reaches receivers within a second or two
-- without polling hard. The pool's one-second schedule covers a missed notification.
create function event_outbox_notify() returns trigger language plpgsql as $$
begin
  perform pg_notify('event_outbox', '');
  return null;
end
$$;
create trigger event_outbox_notify after insert on event_outbox for each statement execute function event_outbox_notify();
