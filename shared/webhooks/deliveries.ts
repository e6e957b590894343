import type { EventType } from '../events/outbox.ts';
import type { Queryable } from '../platform/db.ts';

export const DELIVERY_STATES = ['pending', 'delivering', 'succeeded', 'failed', 'cancelled'] as const;
export type DeliveryState = (typeof DELIVERY_STATES)[number];
export type AttemptOutcome = 'succeeded' | 'failed' | 'interrupted';

/**
 * Fans one batch of unpublished outbox events out to deliveries and marks the events published, in
 * one statement (so one transaction): an event is published exactly when its deliveries exist.
 * Market-wide events (workspace null: price.updated) go to every live endpoint subscribed to the
 * type; a workspace's events to that workspace's endpoints only. Endpoints receive events that
 * happened after they were created, not a backlog from before. SKIP LOCKED lets any number of
 * dispatchers run at once without taking the same events.
 */
export async function dispatchOutboxBatch(
  db: Queryable,
  batchSize: number,
  now: Date,
  firstAttemptAt: Date = now,
): Promise<{ events: number; deliveries: { id: string }[] }> {
  const [result] = await db<{ events: number; deliveries: string[] }[]>`
    with claimed as (
      select id, event_type, workspace_id, endpoint_id, created_at from event_outbox
      where published_at is null
      order by created_at
      limit ${batchSize}
      for update skip locked
    ), targets as (
      -- Events of a type: every live subscribed endpoint (of the event's workspace, if it has one).
      select c.id as event_id, c.event_type, w.id as endpoint_id
      from claimed c
      join webhook_endpoints w
        on c.endpoint_id is null
       and w.event_types @> array[c.event_type]
       and (c.workspace_id is null or w.workspace_id = c.workspace_id)
       and w.deleted_at is null and w.disabled_at is null
       and w.created_at <= c.created_at
      union all
      -- Events for one endpoint (webhook.test, docs/design.md §15): that endpoint, whatever its event_types.
      select c.id, c.event_type, w.id
      from claimed c
      join webhook_endpoints w
        on w.id = c.endpoint_id
       and (c.workspace_id is null or w.workspace_id = c.workspace_id)
       and w.deleted_at is null and w.disabled_at is null
    ), fanned as (
      insert into webhook_deliveries (id, endpoint_id, event_id, event_type, state, attempt_count, next_attempt_at, created_at)
      select gen_random_uuid(), t.endpoint_id, t.event_id, t.event_type, 'pending', 0, ${firstAttemptAt}, ${now}
      from targets t
      on conflict (endpoint_id, event_id) do nothing
      returning id
    ), published as (
      update event_outbox o set published_at = ${now} from claimed c where o.id = c.id and o.created_at = c.created_at returning 1
    )
    select (select count(*)::int from published) as events,
           coalesce((select array_agg(id) from fanned), '{}')::text[] as deliveries`;
  return { events: result!.events, deliveries: result!.deliveries.map((id) => ({ id })) };
}

export type ClaimedDelivery = {
  id: string;
  attempt: number;
  /** Attempts of the schedule made so far, this one included unless it is manual. */
  scheduled_attempts: number;
  /** Asked for by POST …/retry: outside the schedule. */
  manual: boolean;
  /** For a manual attempt: the scheduled retry it pre-empted (null: the schedule was over). */
  resume_attempt_at: Date | null;
  endpoint_id: string;
  workspace_id: string;
  url: string;
  secret_ciphertext: Buffer | null;
  secret_key_id: string | null;
  previous_secret_ciphertext: Buffer | null;
  previous_secret_key_id: string | null;
  previous_secret_expires_at: Date | null;
  failing_since: Date | null;
  endpoint_live: boolean;
  event_id: string;
  event_type: EventType;
  payload: unknown;
  event_created_at: Date;
};

/**
 * Takes due, pending deliveries for one attempt each: they become `delivering` under a lease, their
 * attempt counts grow, and their endpoints and events come back with them. Those not pending or not
 * yet due (another worker has them, they settled, or this is a stale job) are left out: Postgres,
 * not the queue, decides that an attempt happens once.
 */
export async function claimDeliveries(
  db: Queryable,
  ids: readonly string[],
  times: { now: Date /** Due at or before this (a little past now: hosts' clocks differ). */; dueBy: Date; leaseUntil: Date },
): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const { now, dueBy, leaseUntil } = times;
  return db<ClaimedDelivery[]>`
    update webhook_deliveries d
    set state = 'delivering', attempt_count = d.attempt_count + 1, next_attempt_at = null,
        manual_attempts = d.manual_attempts + (d.retry_requested_at is not null)::int,
        attempt_started_at = ${now}, lease_until = ${leaseUntil}
    from webhook_endpoints w, event_outbox o
    where d.id = any(${ids as string[]}::uuid[]) and d.state = 'pending' and d.next_attempt_at <= ${dueBy}
      and w.id = d.endpoint_id and o.id = d.event_id
    returning d.id, d.attempt_count as attempt, d.attempt_count - d.manual_attempts as scheduled_attempts,
              (d.retry_requested_at is not null) as manual, d.resume_attempt_at,
              d.endpoint_id, w.workspace_id, w.url, w.secret_ciphertext, w.secret_key_id,
              w.previous_secret_ciphertext, w.previous_secret_key_id, w.previous_secret_expires_at, w.failing_since,
              (w.deleted_at is null and w.disabled_at is null) as endpoint_live,
              o.id as event_id, o.event_type, o.payload, o.created_at as event_created_at`;
}

/** An attempt to record (recordAttempts). */
export type NewAttempt = {
  deliveryId: string;
  endpointId: string;
  attempt: number;
  manual: boolean;
  startedAt: Date;
  durationMs: number | null;
  outcome: Exclude<AttemptOutcome, 'interrupted'>;
  responseStatus: number | null;
  error: string | null;
  nextAttemptAt: Date | null;
  finishedAt: Date;
};

/**
 * Records attempts and moves their deliveries on (to pending with `nextAttemptAt`, or settled), all
 * in one statement. Every attempt row is written; a delivery only moves if this attempt still holds
 * it (a lease that ran out may have been taken over). An endpoint's run of failures starts at its
 * first failed attempt and ends at any success (docs/design.md §15: five days of it disable the endpoint);
 * its row is written only when that changes. Returns the ids of the deliveries that moved.
 */
export async function recordAttempts(db: Queryable, attempts: readonly NewAttempt[]): Promise<Set<string>> {
  if (attempts.length === 0) return new Set();
  const rows = attempts.map((attempt) => {
    const state: DeliveryState = attempt.outcome === 'succeeded' ? 'succeeded' : attempt.nextAttemptAt ? 'pending' : 'failed';
    return {
      delivery_id: attempt.deliveryId,
      attempt: attempt.attempt,
      started_at: attempt.startedAt.toISOString(),
      duration_ms: attempt.durationMs,
      outcome: attempt.outcome,
      response_status: attempt.responseStatus,
      error: attempt.error?.slice(0, 500) ?? null,
      next_attempt_at: attempt.nextAttemptAt?.toISOString() ?? null,
      manual: attempt.manual,
      state,
      settled_at: state === 'pending' ? null : attempt.finishedAt.toISOString(),
    };
  });
  // Per endpoint, the latest attempt of the batch decides: a success ends its run of failures, a
  // failure starts one (at the earliest failed attempt) if none is running.
  const runs = new Map<string, { endpoint_id: string; failing: boolean; since: string }>();
  for (const attempt of [...attempts].sort((a, b) => a.finishedAt.getTime() - b.finishedAt.getTime())) {
    const failing = attempt.outcome !== 'succeeded';
    const previous = runs.get(attempt.endpointId);
    const since = failing && previous?.failing ? previous.since : attempt.startedAt.toISOString();
    runs.set(attempt.endpointId, { endpoint_id: attempt.endpointId, failing, since });
  }
  const moved = await db<{ id: string }[]>`
    with input as (
      select * from jsonb_to_recordset(${db.json(rows as never)}) as t(
        delivery_id uuid, attempt integer, started_at timestamptz, duration_ms integer, outcome text, response_status integer,
        error text, next_attempt_at timestamptz, manual boolean, state text, settled_at timestamptz)
    ), recorded as (
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, outcome, response_status, error, next_attempt_at, manual)
      select delivery_id, attempt, started_at, duration_ms, outcome, response_status, error, next_attempt_at, manual from input
    ), run as (
      update webhook_endpoints w
      set failing_since = case when r.failing then r.since end
      from jsonb_to_recordset(${db.json([...runs.values()] as never)}) as r(endpoint_id uuid, failing boolean, since timestamptz)
      where w.id = r.endpoint_id and (case when r.failing then w.failing_since is null else w.failing_since is not null end)
    )
    update webhook_deliveries d
    set state = i.state, next_attempt_at = i.next_attempt_at, lease_until = null,
        last_response_status = i.response_status, last_error = i.error, settled_at = i.settled_at,
        retry_requested_at = null, resume_attempt_at = null
    from input i
    where d.id = i.delivery_id and d.state = 'delivering' and d.attempt_count = i.attempt
    returning d.id`;
  return new Set(moved.map((row) => row.id));
}

/** Settles a claimed delivery without an attempt (its endpoint went away before it was sent). */
export async function cancelDelivery(db: Queryable, id: string, reason: string, now: Date): Promise<void> {
  await db`
    update webhook_deliveries set state = 'cancelled', lease_until = null, next_attempt_at = null, settled_at = ${now}, last_error = ${reason},
        retry_requested_at = null, resume_attempt_at = null
    where id = ${id} and state = 'delivering'`;
}

export type DeliveryForRetry = { id: string; event_id: string; state: DeliveryState; attempt_count: number; event_exists: boolean };

/** A delivery of this endpoint, locked for a manual retry (docs/design.md §15), or null. */
export async function findDeliveryForRetry(db: Queryable, endpointId: string, deliveryId: string): Promise<DeliveryForRetry | null> {
  const [row] = await db<DeliveryForRetry[]>`
    select d.id, d.event_id, d.state, d.attempt_count, exists (select 1 from event_outbox o where o.id = d.event_id) as event_exists
    from webhook_deliveries d
    where d.id = ${deliveryId} and d.endpoint_id = ${endpointId}
    for update of d`;
  return row ?? null;
}

/**
 * Makes a delivery whose last attempt failed due now for one manual attempt. A pending one keeps
 * its scheduled time in `resume_attempt_at` (a second request before the attempt keeps the first's);
 * a failed one is unsettled, with none (it fails again if this attempt fails).
 */
export async function requestManualAttempt(db: Queryable, deliveryId: string, now: Date): Promise<{ attempt_count: number }> {
  const [row] = await db<{ attempt_count: number }[]>`
    update webhook_deliveries
    set resume_attempt_at = case when retry_requested_at is not null then resume_attempt_at when state = 'pending' then next_attempt_at end,
        retry_requested_at = ${now}, state = 'pending', next_attempt_at = ${now}, settled_at = null
    where id = ${deliveryId} and state in ('pending', 'failed')
    returning attempt_count`;
  return row!;
}

export const INTERRUPTED_ATTEMPT = 'the worker stopped before the attempt finished';

/**
 * Deliveries whose lease ran out (their worker died or hung mid-attempt) go back to pending, due at
 * once, with the interrupted attempt recorded: at least once, never lost. An interrupted final
 * attempt still gets one more try; a delivery past that fails, so a delivery that kills its worker
 * every time cannot loop for ever.
 */
export async function reclaimExpiredLeases(
  db: Queryable,
  now: Date,
  maxAttempts: number,
  limit = 1_000,
): Promise<{ id: string; attempt_count: number; state: DeliveryState }[]> {
  return db<{ id: string; attempt_count: number; state: DeliveryState }[]>`
    with expired as (
      select id, attempt_count, manual_attempts, attempt_started_at, retry_requested_at, resume_attempt_at from webhook_deliveries
      where state = 'delivering' and lease_until < ${now}
      order by lease_until
      limit ${limit}
      for update skip locked
    ), interrupted as (
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, outcome, error, manual)
      select id, attempt_count, coalesce(attempt_started_at, ${now}), 'interrupted', ${INTERRUPTED_ATTEMPT}, retry_requested_at is not null from expired
    ), next as (
      -- An interrupted manual attempt returns the delivery to its schedule (or to failed when that
      -- was over), so a retry that kills its worker is not made again and again.
      select id,
             case when retry_requested_at is not null then case when resume_attempt_at is null then 'failed' else 'pending' end
                  when attempt_count - manual_attempts > ${maxAttempts} then 'failed' else 'pending' end as state,
             case when retry_requested_at is not null then resume_attempt_at else ${now}::timestamptz end as due
      from expired
    )
    update webhook_deliveries d
    set state = n.state,
        next_attempt_at = case when n.state = 'pending' then n.due end,
        settled_at = case when n.state = 'failed' then ${now}::timestamptz end,
        lease_until = null, last_response_status = null, last_error = ${INTERRUPTED_ATTEMPT},
        retry_requested_at = null, resume_attempt_at = null
    from next n
    where d.id = n.id
    returning d.id, d.attempt_count, d.state`;
}

/** Pending deliveries overdue by more than the grace period: their job was lost (or never enqueued). */
export async function findOverdueDeliveries(db: Queryable, overdueBefore: Date, limit = 1_000): Promise<{ id: string; attempt_count: number }[]> {
  return db<{ id: string; attempt_count: number }[]>`
    select id, attempt_count from webhook_deliveries
    where state = 'pending' and next_attempt_at < ${overdueBefore}
    order by next_attempt_at
    limit ${limit}`;
}

export const EVENT_EXPIRED = 'the event expired (RETENTION_OUTBOX_DAYS) before it was delivered';

/**
 * Before an outbox partition is dropped (shared/retention/partitions.ts): deliveries of its events
 * that are still to be made fail (their payload goes with the partition), and events never
 * dispatched are counted. With the retention well past the retry schedule (~28 h), both are 0
 * unless the webhooks pool was down for days.
 */
export async function failDeliveriesOfExpiredEvents(db: Queryable, outboxPartition: string): Promise<{ failed: number; unpublished: number }> {
  const failed = await db.unsafe(
    `update webhook_deliveries set state = 'failed', next_attempt_at = null, lease_until = null, settled_at = now(), last_error = $1
     where state in ('pending', 'delivering') and event_id in (select id from ${outboxPartition})`,
    [EVENT_EXPIRED],
  );
  const [events] = await db.unsafe<{ unpublished: number }[]>(`select count(*)::int as unpublished from ${outboxPartition} where published_at is null`);
  return { failed: failed.count, unpublished: events!.unpublished };
}

/** Settled deliveries older than the retention go (attempts with them), then deleted endpoints left without any. */
export async function deleteExpiredDeliveries(db: Queryable, settledBefore: Date, limit = 5_000): Promise<number> {
  const rows = await db`
    delete from webhook_deliveries where id in (
      select id from webhook_deliveries where settled_at < ${settledBefore} order by settled_at limit ${limit})
    returning 1`;
  await db`
    delete from webhook_endpoints w
    where w.deleted_at < ${settledBefore}
      and not exists (select 1 from webhook_deliveries d where d.endpoint_id = w.id)`;
  return rows.length;
}

export type DeliveryAttempt = {
  attempt: number;
  status: AttemptOutcome;
  response_status: number | null;
  duration_ms: number | null;
  error: string | null;
  started_at: string;
  next_attempt_at: string | null;
  /** Made by POST …/retry rather than the schedule. */
  manual: boolean;
};

export type Delivery = {
  id: string;
  event_id: string;
  event_type: EventType;
  status: DeliveryState;
  attempt_count: number;
  next_attempt_at: string | null;
  last_response_status: number | null;
  last_error: string | null;
  created_at: string;
  settled_at: string | null;
  attempts: DeliveryAttempt[];
};

export type DeliveryPosition = { created_at: string; id: string };

type DeliveryRow = Omit<Delivery, 'attempts' | 'next_attempt_at' | 'created_at' | 'settled_at' | 'status'> & {
  state: DeliveryState;
  next_attempt_at: Date | null;
  created_at: Date;
  settled_at: Date | null;
  created_at_text: string;
};

type AttemptRow = {
  delivery_id: string;
  attempt: number;
  outcome: AttemptOutcome;
  response_status: number | null;
  duration_ms: number | null;
  error: string | null;
  started_at: Date;
  next_attempt_at: Date | null;
  manual: boolean;
};

/** One page of an endpoint's deliveries, newest first, each with every attempt (at most a schedule's worth). */
export async function listDeliveries(
  db: Queryable,
  endpointId: string,
  state: DeliveryState | undefined,
  after: DeliveryPosition | null,
  limit: number,
): Promise<{ deliveries: Delivery[]; next: DeliveryPosition | null }> {
  const rows = await db<DeliveryRow[]>`
    select d.id, d.event_id, d.event_type, d.state, d.attempt_count, d.next_attempt_at, d.last_response_status, d.last_error,
           d.created_at, d.settled_at,
           to_char(d.created_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as created_at_text
    from webhook_deliveries d
    where d.endpoint_id = ${endpointId}
      ${state ? db`and d.state = ${state}` : db``}
      ${after ? db`and (d.created_at, d.id) < (${after.created_at}::timestamptz, ${after.id}::uuid)` : db``}
    order by d.created_at desc, d.id desc
    limit ${limit + 1}`;
  const page = rows.slice(0, limit);
  const attempts =
    page.length === 0
      ? []
      : await db<AttemptRow[]>`
          select delivery_id, attempt, outcome, response_status, duration_ms, error, started_at, next_attempt_at, manual
          from webhook_delivery_attempts where delivery_id in ${db(page.map((row) => row.id))}
          order by id`;
  const byDelivery = new Map<string, DeliveryAttempt[]>();
  for (const attempt of attempts) {
    const list = byDelivery.get(attempt.delivery_id) ?? [];
    list.push({
      attempt: attempt.attempt,
      status: attempt.outcome,
      response_status: attempt.response_status,
      duration_ms: attempt.duration_ms,
      error: attempt.error,
      started_at: attempt.started_at.toISOString(),
      next_attempt_at: attempt.next_attempt_at?.toISOString() ?? null,
      manual: attempt.manual,
    });
    byDelivery.set(attempt.delivery_id, list);
  }
  const last = page[page.length - 1];
  return {
    deliveries: page.map((row) => ({
      id: row.id,
      event_id: row.event_id,
      event_type: row.event_type,
      status: row.state,
      attempt_count: row.attempt_count,
      next_attempt_at: row.next_attempt_at?.toISOString() ?? null,
      last_response_status: row.last_response_status,
      last_error: row.last_error,
      created_at: row.created_at.toISOString(),
      settled_at: row.settled_at?.toISOString() ?? null,
      attempts: byDelivery.get(row.id) ?? [],
    })),
    next: rows.length > limit && last ? { created_at: last.created_at_text, id: last.id } : null,
  };
}
