import { z } from 'zod';
import type { JobsOptions } from 'bullmq';
import { SOURCE_NAMES } from './sources/types.ts';

/**
 * The job registry (STYLE "one job registry"): every job's queue, payload schema and default
 * options. Queue names are the contract between the API (producer) and the worker pools.
 */
export const POOLS = ['ingest', 'index', 'render', 'exports', 'webhooks', 'maintenance'] as const;
export type Pool = (typeof POOLS)[number];

const defaultOptions: JobsOptions = {
  attempts: 5,
  backoff: { type: 'exponential', delay: 2_000 },
  removeOnComplete: { age: 3_600, count: 1_000 },
  removeOnFail: { age: 7 * 86_400 },
};

export const JOBS = {
  'ingest.source': {
    queue: 'ingest',
    payload: z.object({ source: z.enum(SOURCE_NAMES) }).strict(),
    // No retries: the next scheduled run is the retry, and a run slot is claimed once in Postgres.
    options: { ...defaultOptions, attempts: 1, removeOnFail: { age: 86_400, count: 1_000 } },
  },
  'prices.snapshot': {
    queue: 'index',
    payload: z.object({ after_run: z.string().uuid().optional() }).strict(),
    options: { ...defaultOptions, attempts: 3, removeOnComplete: true, removeOnFail: { age: 86_400 } },
  },
  'market_index.calculate': {
    queue: 'index',
    // Enqueued after every successful ingest run with jobId `index-<run>`: one calculation per run.
    payload: z.object({ marketplace: z.enum(SOURCE_NAMES), after_run: z.string().uuid() }).strict(),
    options: { ...defaultOptions, attempts: 3, removeOnComplete: { age: 3_600, count: 1_000 }, removeOnFail: { age: 86_400 } },
  },
  'webhooks.dispatch': {
    queue: 'webhooks',
    // Fans unpublished outbox events out to deliveries. Scheduled every second and nudged (jobId
    // `dispatch-nudge`) by Postgres NOTIFY on outbox inserts; it loops until the outbox is drained.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'webhooks.deliver': {
    queue: 'webhooks',
    // One attempt of one delivery, jobId `whd-<delivery>-<attempts made>`. Retries are new delayed
    // jobs on the delivery's own schedule (not BullMQ's backoff); Postgres decides whether an attempt
    // is due. Removed when done, so the sweeper can always re-add a job that went missing.
    payload: z.object({ delivery_id: z.string().uuid() }).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: true },
  },
  'webhooks.sweep': {
    queue: 'webhooks',
    // Returns deliveries whose worker died mid-attempt to pending, re-enqueues overdue ones whose job
    // vanished, and drops settled deliveries past their retention.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'maintenance.cleanup': {
    queue: 'maintenance',
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 3 },
  },
  'audit_export.run': {
    queue: 'exports',
    // jobId `audit-export-<id>-<attempt>`. Attempts are leases counted in Postgres, not BullMQ
    // retries: a failed or finished job is removed and the sweeper re-enqueues a still-queued row.
    payload: z.object({ export_id: z.uuid() }).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: true },
  },
  'audit_export.sweep': {
    queue: 'exports',
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
} as const satisfies Record<string, { queue: Pool; payload: z.ZodType; options: JobsOptions }>;

export type JobName = keyof typeof JOBS;
export type JobPayload<Name extends JobName> = z.infer<(typeof JOBS)[Name]['payload']>;
export type JobContext = { jobId: string | undefined; attempt: number; /** When the job was due (scheduled jobs: its slot). */ scheduledAt: Date };
export type JobHandler<Name extends JobName> = (payload: JobPayload<Name>, context: JobContext) => Promise<unknown>;
/** One handler per job, by construction: a missing or misspelt name is a type error. */
export type JobHandlers = { [Name in JobName]: JobHandler<Name> };

export function jobsOfPool(pool: Pool): JobName[] {
  return (Object.keys(JOBS) as JobName[]).filter((name) => JOBS[name].queue === pool);
}

export function queueName(pool: Pool): string {
  return pool;
}

/** Validates a payload against its job's schema (at enqueue and again in the processor). */
export function parseJobPayload<Name extends JobName>(name: Name, payload: unknown): JobPayload<Name> {
  return JOBS[name].payload.parse(payload) as JobPayload<Name>;
}

/**
 * Checks a pool's registered handlers against the registry: every job of the pool has exactly one
 * handler and no handler names a job of another pool. Boot fails otherwise.
 */
export function checkHandlers(pool: Pool, registrations: readonly (readonly [string, unknown])[]): void {
  const problems: string[] = [];
  const counts = new Map<string, number>();
  for (const [name] of registrations) counts.set(name, (counts.get(name) ?? 0) + 1);
  for (const name of jobsOfPool(pool)) {
    const count = counts.get(name) ?? 0;
    if (count === 0) problems.push(`job ${name} has no handler`);
    if (count > 1) problems.push(`job ${name} has ${count} handlers`);
  }
  for (const name of counts.keys()) {
    if (!(name in JOBS)) problems.push(`handler for unknown job ${name}`);
    else if (JOBS[name as JobName].queue !== pool) problems.push(`job ${name} belongs to pool ${JOBS[name as JobName].queue}, not ${pool}`);
  }
  if (problems.length > 0) throw new Error(`job registry mismatch in pool ${pool}: ${problems.join('; ')}`);
}
