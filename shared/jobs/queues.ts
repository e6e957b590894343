import { type JobsOptions, Queue } from 'bullmq';
import { z } from 'zod';
import { SOURCE_NAMES } from '../platform/source-names.ts';

/**
 * The job registry (docs/conventions.md "one job registry"): every job's queue, payload schema and default
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
  'fx.refresh': {
    queue: 'ingest',
    // docs/design.md §14/§19: the ECB reference rates, every SOURCE_FX_INTERVAL_SECONDS (scheduler `ingest-fx`)
    // and once at start-up (jobId `ingest-fx-startup-<minute>`). A failed fetch is recorded, keeps the
    // last good rates, and adds its own retry (jobId `fx-retry-<failures in a row>`, after 60 s doubling
    // up to the interval) until one succeeds: BullMQ's attempts would stop after a few.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'sales.skinport': {
    queue: 'ingest',
    // docs/design.md §19: skinport's sales history (workers/ingest/sales.ts), scheduled every
    // SOURCE_SKINPORT_SALES_INTERVAL_SECONDS while skinport is enabled; a slot is claimed once in
    // Postgres and the next scheduled read is the retry.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'fx.steam_implied': {
    queue: 'ingest',
    // docs/design.md §19: rates implied by Steam's prices for the wallet currencies the ECB lacks
    // (shared/fx/steam-implied.ts), every SOURCE_FX_INTERVAL_SECONDS while steam is enabled (scheduler
    // `ingest-fx-steam`) and once at start-up (which, with steam disabled, marks them not offered). A run
    // cut short by a 429 or an outage adds its own retry (jobId `fx-steam-retry-<failures in a row>`).
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'prices.stream_relay': {
    queue: 'ingest',
    // Copies the price stream's log (Postgres) to the Redis stream the API reads: what a run's own
    // relay right after its commit could not (its process died, Redis was down). Nudged (jobId
    // `stream-relay-nudge`) by NOTIFY on log inserts and scheduled every few seconds; idempotent.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'prices.snapshot': {
    queue: 'index',
    // jobId `snapshot-<interval>` (shared/prices/snapshot.ts snapshotJob): one build per interval, at its end.
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
  'webhooks.deliver_batch': {
    queue: 'webhooks',
    // The first attempts of up to DELIVERY_BATCH_SIZE fresh deliveries, as the dispatcher fanned them
    // out (jobId `whb-<first delivery>-<count>`): claimed and recorded in one statement each
    // (shared/webhooks/deliver.ts attemptDeliveries). Their retries are webhooks.deliver jobs.
    payload: z.object({ delivery_ids: z.array(z.string().uuid()).min(1).max(100) }).strict(),
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
  'maintenance.retention': {
    queue: 'maintenance',
    // Hourly (and at boot): creates the time partitions ahead and drops those past their table's
    // retention (shared/retention/partitions.ts). Idempotent; the next run is the retry.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'trade_intents.expire': {
    queue: 'maintenance',
    // Drafts past expires_at become expired and release their reservations (docs/design.md §11). Every
    // 30 s; a create also ends the expired drafts holding its own assets, so none waits on this.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'inventory_watch.read': {
    queue: 'maintenance',
    // docs/design.md §15 (shared/gameplatform/inventory-watch.ts): starts and ends watches, then reads due
    // watched inventories, oldest snapshot first, within the global Steam budget, for at most a
    // bounded time. Scheduled (`maintenance-inventory-watch`); runs of several processes claim
    // different accounts in Postgres. The next run is the retry.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
  'inventory_watch.tradable': {
    queue: 'maintenance',
    // One delayed job per watched asset with a future trade hold, at its end: jobId
    // `inventory-tradable-<account>-<asset>` (a later snapshot's repeat is a no-op). Sends
    // item.tradable if the asset is still in the watch's latest snapshot; Postgres guards the once.
    payload: z.object({ account_id: z.number().int().positive(), asset_id: z.string().regex(/^[0-9]{1,20}$/), tradable_at: z.iso.datetime() }).strict(),
    options: { ...defaultOptions, attempts: 3, removeOnComplete: true, removeOnFail: { age: 7 * 86_400 } },
  },
  'inventory_watch.protection_ended': {
    queue: 'maintenance',
    // docs/design.md §17: delayed to the asset's protection instant; jobId `inventory-protection-ended-<account>-<asset>`
    // (one per asset: a later read re-adds the same id). Sends item.protection_ended once per asset.
    payload: z.object({ account_id: z.number().int().positive(), asset_id: z.string().regex(/^[0-9]{1,20}$/), protected_until: z.iso.datetime() }).strict(),
    options: { ...defaultOptions, attempts: 3, removeOnComplete: true, removeOnFail: { age: 7 * 86_400 } },
  },
  'trade_history.read': {
    queue: 'maintenance',
    // docs/design.md §17 (shared/gameplatform/trade-history.ts): starts and ends trade-history polls, then reads
    // due accounts' Steam trade history within the shared Steam budget, for at most a bounded time,
    // and records reversals (trade.reversed). Scheduled (`maintenance-trade-history`); runs of several
    // processes claim different accounts in Postgres. No token in the payload: it is read from
    // Postgres by the run. The next run is the retry.
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
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
  'renders.render': {
    queue: 'render',
    // jobId `render-<id>-<attempt>`. As exports: attempts are leases counted in Postgres, not BullMQ
    // retries; a finished job is removed and the sweeper re-enqueues a still-queued row.
    payload: z.object({ render_id: z.uuid() }).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: true },
  },
  'renders.sweep': {
    queue: 'render',
    payload: z.object({}).strict(),
    options: { ...defaultOptions, attempts: 1, removeOnComplete: true, removeOnFail: { age: 86_400, count: 100 } },
  },
} as const satisfies Record<string, { queue: Pool; payload: z.ZodType; options: JobsOptions }>;

export type JobName = keyof typeof JOBS;
export type JobPayload<Name extends JobName> = z.infer<(typeof JOBS)[Name]['payload']>;
export type JobContext = { jobId: string | undefined; attempt: number /** When the job was due (scheduled jobs: its slot). */; scheduledAt: Date };
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

/** Where jobs go: the queue of the job's pool, or a set of pools' queues to pick it from. */
export type JobQueues = Queue | Readonly<Partial<Record<Pool, Queue>>>;
/** Per job: a deterministic id from business keys (a repeat is a no-op; no `:`), and an optional wait. */
export type EnqueueOptions = { jobId: string; delay?: number };
/** `enqueue` with its queues already chosen, as pools hand it to their handlers. */
export type Enqueue = <Name extends JobName>(name: Name, payload: JobPayload<Name>, options: EnqueueOptions) => Promise<void>;
/** A schedule of one job: upserted at boot under a stable id, with a payload of that job. */
export type JobSchedule = { [Name in JobName]: { id: string; job: Name; everyMs: number; data?: JobPayload<Name> } }[JobName];
/**
 * A job enqueued each time a pool starts, with jobId `<id>-<minute of the boot>` (processes of one
 * pool booting in the same minute share it). For work that must not wait for its schedule's next run:
 * a job scheduler that survived a restart keeps its next run, up to a whole interval away.
 */
export type StartupJob = { [Name in JobName]: { id: string; job: Name; data?: JobPayload<Name> } }[JobName];

function queueFor(queues: JobQueues, name: JobName): Queue {
  const pool = JOBS[name].queue;
  const queue = queues instanceof Queue ? queues : queues[pool];
  // A job added to another pool's queue would never find its handler: fail the caller instead.
  if (!queue || queue.name !== queueName(pool)) throw new Error(`job ${name} belongs on queue ${queueName(pool)}, not ${queue?.name ?? 'none'}`);
  return queue;
}

function jobOptions(name: JobName, options: EnqueueOptions): JobsOptions {
  // BullMQ reserves `:` in custom ids (docs/conventions.md: ids from business keys, no `:`).
  if (options.jobId.includes(':')) throw new Error(`job id ${options.jobId} of ${name} contains ':'`);
  return { ...JOBS[name].options, jobId: options.jobId, ...(options.delay === undefined ? {} : { delay: options.delay }) };
}

/**
 * The one way to add a job: the payload is validated against the job's schema (and again in the
 * processor), the job's default options apply, and `jobId` makes a repeat a no-op.
 */
export async function enqueue<Name extends JobName>(queues: JobQueues, name: Name, payload: JobPayload<Name>, options: EnqueueOptions): Promise<void> {
  await queueFor(queues, name).add(name, parseJobPayload(name, payload), jobOptions(name, options));
}

/** `enqueue` for many jobs of one name, in one round trip. */
export async function enqueueMany<Name extends JobName>(
  queues: JobQueues,
  name: Name,
  jobs: readonly { payload: JobPayload<Name>; options: EnqueueOptions }[],
): Promise<void> {
  if (jobs.length === 0) return;
  const queue = queueFor(queues, name);
  await queue.addBulk(jobs.map((job) => ({ name, data: parseJobPayload(name, job.payload), opts: jobOptions(name, job.options) })));
}

/**
 * Creates or updates a job scheduler; its payload is validated like an enqueued one. A scheduler that
 * already exists with the same interval and payload is left alone: upserting it again (every process
 * of a pool does at boot) re-times its ticks from that moment, and the tick already queued at the old
 * offset then shares a slot with one at the new offset (a second run, refused by the run's claim).
 */
export async function upsertSchedule(queues: JobQueues, schedule: JobSchedule): Promise<void> {
  const name: JobName = schedule.job;
  const queue = queueFor(queues, name);
  const data = parseJobPayload(name, schedule.data ?? {});
  const existing = await queue.getJobScheduler(schedule.id);
  if (existing?.every === schedule.everyMs && existing.name === name && JSON.stringify(existing.template?.data) === JSON.stringify(data)) return;
  await queue.upsertJobScheduler(schedule.id, { every: schedule.everyMs }, { name, data, opts: JOBS[name].options });
}

/** Enqueues a pool's start-up job (see StartupJob). */
export async function enqueueStartupJob(queues: JobQueues, startup: StartupJob, at: Date): Promise<void> {
  const name: JobName = startup.job;
  await queueFor(queues, name).add(
    name,
    parseJobPayload(name, startup.data ?? {}),
    jobOptions(name, { jobId: `${startup.id}-${Math.floor(at.getTime() / 60_000)}` }),
  );
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
