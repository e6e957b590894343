import type { Queryable } from '../db.ts';
import type { EventType } from '../events/outbox.ts';

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
      select id, event_type, workspace_id, created_at from event_outbox
      where published_at is null
      order by created_at
      limit ${batchSize}
      for update skip locked
    ), fanned as (
      insert into webhook_deliveries (id, endpoint_id, event_id, event_type, state, attempt_count, next_attempt_at, created_at)
      select gen_random_uuid(), w.id, c.id, c.event_type, 'pending', 0, ${firstAttemptAt}, ${now}
      from claimed c
      join webhook_endpoints w
        on w.event_types @> array[c.event_type]
       and (c.workspace_id is null or w.workspace_id = c.workspace_id)
       and w.deleted_at is null and w.disabled_at is null
       and w.created_at <= c.created_at
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
  endpoint_id: string;
  workspace_id: string;
  url: string;
  secret_ciphertext: Buffer | null;
  secret_key_id: string | null;
  endpoint_live: boolean;
  event_id: string;
  event_type: EventType;
  payload: unknown;
  event_created_at: Date;
};

/**
 * Takes a due, pending delivery for one attempt: it becomes `delivering` under a lease, its attempt
 * count grows, and the endpoint and event come back with it. Null when it is not pending or not
 * yet due (another worker has it, it settled, or this is a stale job): Postgres, not the queue,
 * decides that an attempt happens once.
 */
export async function claimDelivery(
  db: Queryable,
  id: string,
  times: { now: Date; /** Due at or before this (a little past now: hosts' clocks differ). */ dueBy: Date; leaseUntil: Date },
): Promise<ClaimedDelivery | null> {
  const { now, dueBy, leaseUntil } = times;
  const [row] = await db<ClaimedDelivery[]>`
    update webhook_deliveries d
    set state = 'delivering', attempt_count = d.attempt_count + 1, next_attempt_at = null,
        attempt_started_at = ${now}, lease_until = ${leaseUntil}
    from webhook_endpoints w, event_outbox o
    where d.id = ${id} and d.state = 'pending' and d.next_attempt_at <= ${dueBy}
      and w.id = d.endpoint_id and o.id = d.event_id
    returning d.id, d.attempt_count as attempt, d.endpoint_id, w.workspace_id, w.url, w.secret_ciphertext, w.secret_key_id,
              (w.deleted_at is null and w.disabled_at is null) as endpoint_live,
              o.id as event_id, o.event_type, o.payload, o.created_at as event_created_at`;
  return row ?? null;
}

/**
 * Records an attempt and moves the delivery on (to pending with `nextAttemptAt`, or settled), in one
 * statement. The attempt row is always written; the delivery only moves if this attempt still
 * holds it (a lease that ran out may have been taken over).
 */
export async function recordAttempt(
  db: Queryable,
  attempt: {
    deliveryId: string;
    attempt: number;
    startedAt: Date;
    durationMs: number | null;
    outcome: Exclude<AttemptOutcome, 'interrupted'>;
    responseStatus: number | null;
    error: string | null;
    nextAttemptAt: Date | null;
    finishedAt: Date;
  },
): Promise<boolean> {
  const state: DeliveryState = attempt.outcome === 'succeeded' ? 'succeeded' : attempt.nextAttemptAt ? 'pending' : 'failed';
  const error = attempt.error?.slice(0, 500) ?? null;
  const rows = await db`
    with recorded as (
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, duration_ms, outcome, response_status, error, next_attempt_at)
      values (${attempt.deliveryId}, ${attempt.attempt}, ${attempt.startedAt}, ${attempt.durationMs}, ${attempt.outcome},
              ${attempt.responseStatus}, ${error}, ${attempt.nextAttemptAt})
    )
    update webhook_deliveries
    set state = ${state}, next_attempt_at = ${attempt.nextAttemptAt}, lease_until = null,
        last_response_status = ${attempt.responseStatus}, last_error = ${error},
        settled_at = ${state === 'pending' ? null : attempt.finishedAt}
    where id = ${attempt.deliveryId} and state = 'delivering' and attempt_count = ${attempt.attempt}
    returning 1`;
  return rows.length === 1;
}

/** Settles a claimed delivery without an attempt (its endpoint went away before it was sent). */
export async function cancelDelivery(db: Queryable, id: string, reason: string, now: Date): Promise<void> {
  await db`
    update webhook_deliveries set state = 'cancelled', lease_until = null, next_attempt_at = null, settled_at = ${now}, last_error = ${reason}
    where id = ${id} and state = 'delivering'`;
}

export const INTERRUPTED_ATTEMPT = 'the worker stopped before the attempt finished';

/**
 * Deliveries whose lease ran out (their worker died or hung mid-attempt) go back to pending, due at
 * once, with the interrupted attempt recorded: at least once, never lost. An interrupted final
 * attempt still gets one more try; a delivery past that fails, so a delivery that kills its worker
 * every time cannot loop for ever.
 */
export async function reclaimExpiredLeases(db: Queryable, now: Date, maxAttempts: number, limit = 1_000): Promise<{ id: string; attempt_count: number; state: DeliveryState }[]> {
  return db<{ id: string; attempt_count: number; state: DeliveryState }[]>`
    with expired as (
      select id, attempt_count, attempt_started_at from webhook_deliveries
      where state = 'delivering' and lease_until < ${now}
      order by lease_until
      limit ${limit}
      for update skip locked
    ), interrupted as (
      insert into webhook_delivery_attempts (delivery_id, attempt, started_at, outcome, error)
      select id, attempt_count, coalesce(attempt_started_at, ${now}), 'interrupted', ${INTERRUPTED_ATTEMPT} from expired
    )
    update webhook_deliveries d
    set state = case when e.attempt_count > ${maxAttempts} then 'failed' else 'pending' end,
        next_attempt_at = case when e.attempt_count > ${maxAttempts} then null else ${now}::timestamptz end,
        settled_at = case when e.attempt_count > ${maxAttempts} then ${now}::timestamptz end,
        lease_until = null, last_response_status = null, last_error = ${INTERRUPTED_ATTEMPT}
    from expired e
    where d.id = e.id
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
          select delivery_id, attempt, outcome, response_status, duration_ms, error, started_at, next_attempt_at
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
