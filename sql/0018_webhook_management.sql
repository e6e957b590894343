-- Webhook management (docs/design.md §15): secret rotation with a 24 h overlap, test events to one
-- endpoint, manual retries of a delivery, and disabling an endpoint whose every attempt has failed
-- for five days.

-- Secret rotation: the secret in force before the last rotation, sealed like the current one
-- (AES-256-GCM under WEBHOOK_SECRET_KEY, the endpoint id as associated data), and until when
-- deliveries are also signed with it. Rotating again replaces it; deleting the endpoint destroys it.
alter table webhook_endpoints
  add column previous_secret_ciphertext bytea,
  add column previous_secret_key_id text,
  add column previous_secret_expires_at timestamptz,
  -- The start of the endpoint's current run of failed attempts (null after any success): a run
  -- five days long disables the endpoint.
  add column failing_since timestamptz,
  add column updated_at timestamptz,
  add constraint webhook_endpoints_previous_secret_check check (
    (previous_secret_ciphertext is null) = (previous_secret_key_id is null)
    and (previous_secret_ciphertext is null) = (previous_secret_expires_at is null));
-- The sweeper destroys previous secrets once their overlap has passed.
create index webhook_endpoints_previous_secret_idx on webhook_endpoints (previous_secret_expires_at)
  where previous_secret_expires_at is not null;

-- An event for one endpoint only (webhook.test): delivered to it whatever its event_types.
-- Null: every live endpoint subscribed to the type (in the event's workspace, if it has one).
alter table event_outbox add column endpoint_id uuid;

-- Manual retries (POST /v2/webhooks/{id}/deliveries/{delivery_id}/retry) are attempts outside the
-- schedule: `manual_attempts` of `attempt_count` were such, so the schedule's position is
-- attempt_count - manual_attempts. While one is requested, `retry_requested_at` is set, and
-- `resume_attempt_at` keeps the scheduled retry it pre-empted (null when the schedule was over), to
-- which the delivery returns if the manual attempt fails.
alter table webhook_deliveries
  add column manual_attempts integer not null default 0,
  add column retry_requested_at timestamptz,
  add column resume_attempt_at timestamptz;

-- Which attempts a client asked for (retry) rather than the schedule.
alter table webhook_delivery_attempts add column manual boolean not null default false;
