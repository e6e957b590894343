import type { Queryable } from '../db.ts';
import { deleteExpiredDeliveries, dispatchOutboxBatch, findOverdueDeliveries, reclaimExpiredLeases } from './deliveries.ts';

/** A delivery job to enqueue: its id, the attempts made so far (part of the job id), and when. */
export type DeliveryJob = { deliveryId: string; attemptsMade: number; delayMs: number };
export type EnqueueDeliveries = (jobs: DeliveryJob[]) => Promise<void>;

/** One job per delivery attempt (no `:` in BullMQ ids); a re-enqueue of the same attempt is a no-op. */
export function deliveryJobId(deliveryId: string, attemptsMade: number): string {
  return `whd-${deliveryId}-${attemptsMade}`;
}

export const DISPATCH_BATCH_SIZE = 1_000;
/**
 * Delivery jobs added per BullMQ call. A batch of 1 000 events to 20 endpoints is 20 000 deliveries:
 * added in one call, their job objects took a webhooks worker past 300 MB of RSS at the start of a
 * full fan-out (bench:delivery); in calls of 1 000 it stays near its resting size. (Smaller event
 * batches did that too, but slowed the draining of events nobody subscribes to.)
 */
export const ENQUEUE_CHUNK_SIZE = 1_000;
/** A pending delivery this far past due has lost its job (or never got one): the sweeper re-adds it. */
export const OVERDUE_GRACE_MS = 10_000;
/** Settled deliveries (and their attempts) are kept this long for GET /v2/webhooks/{id}/deliveries. */
export const DELIVERY_RETENTION_MS = 30 * 86_400_000;

/**
 * Drains the outbox: batch after batch, fan out and publish (one statement each), then enqueue
 * the new deliveries' first attempts. Enqueueing after commit can fail or be cut off by a crash;
 * the deliveries are in Postgres already, and the sweeper enqueues them once overdue.
 */
export async function dispatchOutbox(
  db: Queryable,
  now: () => Date,
  enqueue: EnqueueDeliveries,
  options: { batchSize?: number; /** The schedule's wait before the first attempt (0: at once). */ firstDelayMs?: number } = {},
): Promise<{ events: number; deliveries: number }> {
  const batchSize = options.batchSize ?? DISPATCH_BATCH_SIZE;
  const firstDelayMs = options.firstDelayMs ?? 0;
  const totals = { events: 0, deliveries: 0 };
  for (;;) {
    const at = now();
    const batch = await dispatchOutboxBatch(db, batchSize, at, new Date(at.getTime() + firstDelayMs));
    totals.events += batch.events;
    totals.deliveries += batch.deliveries.length;
    for (let start = 0; start < batch.deliveries.length; start += ENQUEUE_CHUNK_SIZE) {
      await enqueue(batch.deliveries.slice(start, start + ENQUEUE_CHUNK_SIZE).map(({ id }) => ({ deliveryId: id, attemptsMade: 0, delayMs: firstDelayMs })));
    }
    if (batch.events < batchSize) return totals;
  }
}

/**
 * Postgres is the source of truth for deliveries (STYLE: a sweeper re-enqueues rows whose job went
 * missing): attempts whose worker died go back to pending, pending deliveries well past due are
 * enqueued again (an existing job with the same id makes that a no-op), and old settled
 * deliveries are dropped (events and their prices.updated pages go with their outbox partitions,
 * shared/retention/partitions.ts).
 */
export async function sweepDeliveries(
  db: Queryable,
  now: Date,
  maxAttempts: number,
  enqueue: EnqueueDeliveries,
): Promise<{ reclaimed: number; requeued: number; expired: number }> {
  const reclaimed = await reclaimExpiredLeases(db, now, maxAttempts);
  const retry = reclaimed.filter((delivery) => delivery.state === 'pending');
  const overdue = await findOverdueDeliveries(db, new Date(now.getTime() - OVERDUE_GRACE_MS));
  const jobs = [...retry, ...overdue].map((delivery) => ({ deliveryId: delivery.id, attemptsMade: delivery.attempt_count, delayMs: 0 }));
  if (jobs.length > 0) await enqueue(jobs);
  const expired = await deleteExpiredDeliveries(db, new Date(now.getTime() - DELIVERY_RETENTION_MS));
  return { reclaimed: reclaimed.length, requeued: overdue.length, expired };
}
