import type { Queue } from 'bullmq';
import { enqueueMany } from '../jobs/queues.ts';
import type { Queryable } from '../platform/db.ts';
import { deleteExpiredDeliveries, dispatchOutboxBatch, findOverdueDeliveries, reclaimExpiredLeases } from './deliveries.ts';
import { dropExpiredPreviousSecrets } from './endpoints.ts';

/**
 * A delivery job to enqueue: its id, the attempts made so far (part of the job id), and when.
 * `jobId` overrides the schedule's id (a manual retry's job must not collide with the scheduled one).
 */
export type DeliveryJob = { deliveryId: string; attemptsMade: number; delayMs: number; jobId?: string };
export type EnqueueDeliveries = (jobs: DeliveryJob[]) => Promise<void>;
/** First attempts of fresh deliveries, a batch per job (one claim and one record statement per batch). */
export type EnqueueDeliveryBatches = (batches: { deliveryIds: string[]; delayMs: number }[]) => Promise<void>;

/**
 * Fresh deliveries per webhooks.deliver_batch job. Its attempts run concurrently and are recorded
 * together once all have answered (at most WEBHOOK_TIMEOUT_MS), so a slow receiver delays the
 * recording, never the sending, of the others in its batch.
 */
export const DELIVERY_BATCH_SIZE = 25;

/** One job per delivery attempt (no `:` in BullMQ ids); a re-enqueue of the same attempt is a no-op. */
export function deliveryJobId(deliveryId: string, attemptsMade: number): string {
  return `whd-${deliveryId}-${attemptsMade}`;
}

/** `webhooks.deliver_batch` jobs: a batch's job id from its first delivery and its size (a re-enqueue is a no-op). */
export function deliveryBatchEnqueuer(queue: Queue): EnqueueDeliveryBatches {
  return (batches) =>
    enqueueMany(
      queue,
      'webhooks.deliver_batch',
      batches.map((batch) => ({
        payload: { delivery_ids: batch.deliveryIds },
        options: { jobId: `whb-${batch.deliveryIds[0]}-${batch.deliveryIds.length}`, delay: batch.delayMs },
      })),
    );
}

/** `webhooks.deliver` jobs on the webhooks queue (the pool's own, or the API's producer for manual retries). */
export function deliveryEnqueuer(queue: Queue): EnqueueDeliveries {
  return (jobs) =>
    enqueueMany(
      queue,
      'webhooks.deliver',
      jobs.map((job) => ({
        payload: { delivery_id: job.deliveryId },
        options: { jobId: job.jobId ?? deliveryJobId(job.deliveryId, job.attemptsMade), delay: job.delayMs },
      })),
    );
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
 * the new deliveries' first attempts, DELIVERY_BATCH_SIZE to a job. Enqueueing after commit can fail or be cut off by a crash;
 * the deliveries are in Postgres already, and the sweeper enqueues them once overdue.
 */
export async function dispatchOutbox(
  db: Queryable,
  now: () => Date,
  enqueue: EnqueueDeliveryBatches,
  options: { batchSize?: number /** The schedule's wait before the first attempt (0: at once). */; firstDelayMs?: number } = {},
): Promise<{ events: number; deliveries: number }> {
  const batchSize = options.batchSize ?? DISPATCH_BATCH_SIZE;
  const firstDelayMs = options.firstDelayMs ?? 0;
  const totals = { events: 0, deliveries: 0 };
  for (;;) {
    const at = now();
    const batch = await dispatchOutboxBatch(db, batchSize, at, new Date(at.getTime() + firstDelayMs));
    totals.events += batch.events;
    totals.deliveries += batch.deliveries.length;
    const ids = batch.deliveries.map(({ id }) => id);
    const jobs: { deliveryIds: string[]; delayMs: number }[] = [];
    for (let start = 0; start < ids.length; start += DELIVERY_BATCH_SIZE)
      jobs.push({ deliveryIds: ids.slice(start, start + DELIVERY_BATCH_SIZE), delayMs: firstDelayMs });
    for (let start = 0; start < jobs.length; start += ENQUEUE_CHUNK_SIZE) await enqueue(jobs.slice(start, start + ENQUEUE_CHUNK_SIZE));
    if (batch.events < batchSize) return totals;
  }
}

/**
 * Postgres is the source of truth for deliveries (docs/conventions.md: a sweeper re-enqueues rows whose job went
 * missing): attempts whose worker died go back to pending, pending deliveries well past due are
 * enqueued again (an existing job with the same id makes that a no-op), old settled
 * deliveries are dropped, and so are rotated-out secrets past their overlap (events and their prices.updated pages go with their outbox partitions,
 * shared/retention/partitions.ts).
 */
export async function sweepDeliveries(
  db: Queryable,
  now: Date,
  maxAttempts: number,
  enqueue: EnqueueDeliveries,
): Promise<{ reclaimed: number; requeued: number; expired: number; previousSecretsDropped: number }> {
  const reclaimed = await reclaimExpiredLeases(db, now, maxAttempts);
  const retry = reclaimed.filter((delivery) => delivery.state === 'pending');
  const overdue = await findOverdueDeliveries(db, new Date(now.getTime() - OVERDUE_GRACE_MS));
  const jobs = [...retry, ...overdue].map((delivery) => ({ deliveryId: delivery.id, attemptsMade: delivery.attempt_count, delayMs: 0 }));
  if (jobs.length > 0) await enqueue(jobs);
  const expired = await deleteExpiredDeliveries(db, new Date(now.getTime() - DELIVERY_RETENTION_MS));
  // A rotation's previous secret is destroyed once its 24 h are over (docs/design.md §15).
  const previousSecretsDropped = await dropExpiredPreviousSecrets(db, now);
  return { reclaimed: reclaimed.length, requeued: overdue.length, expired, previousSecretsDropped };
}
