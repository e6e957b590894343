import type { Queue } from 'bullmq';
import type { Logger } from '../shared/platform/logger.ts';

/**
 * The lease kit of the pools whose jobs are leased rows (`exports`, `render`; docs/design.md §7 and §10): the
 * heartbeat that keeps a lease while the work runs, the final confirm before the commit, and the
 * sweep that returns leases nobody renews. The SQL stays in each domain's repository; the kit takes
 * it as plain functions.
 *
 * Holding a lease is strict: the work is aborted (through `signal`) as soon as a renewal answers
 * that the lease is no longer ours, and, when a renewal fails, as soon as the last expiry a renewal
 * confirmed has passed (this worker cannot prove it still holds the lease). The confirm right
 * before the commit and the commit itself are guarded by the lease token as well.
 */
export class LeaseLostError extends Error {
  constructor(what: string) {
    super(`the ${what} lease was lost`);
  }
}

/** Three renewals per lease, so one late or failed renewal never costs a healthy worker its job; at least 200 ms apart. */
export function heartbeatEveryMs(leaseMs: number): number {
  return Math.max(200, Math.floor(leaseMs / 3));
}

/** Calls `tick` every `ms` until the returned function is called (setInterval; tests pass their own). */
export type Every = (ms: number, tick: () => Promise<void>) => () => void;

const everyInterval: Every = (ms, tick) => {
  const timer = setInterval(() => void tick(), ms);
  return () => clearInterval(timer);
};

export type LeaseOptions = {
  /** What is leased, for messages ("export", "render"). */
  what: string;
  /** The expiry of the lease as taken. */
  leasedUntil: Date;
  leaseMs: number;
  /**
   * Extends the lease by `leaseMs` from now if this worker's token still holds it: the new expiry,
   * or null when the lease is no longer ours. A rejection means the answer is unknown.
   */
  renew: () => Promise<Date | null>;
  now: () => Date;
  log: Logger;
  every?: Every;
};

export type HeldLease = {
  /** Aborted with a LeaseLostError once the lease is lost, or may be: stop the work. */
  readonly signal: AbortSignal;
  /** The last expiry a renewal confirmed. */
  leasedUntil(): Date;
  /**
   * Right before the commit: throws LeaseLostError if the lease was lost, else renews once more so
   * the commit has a full lease ahead of it (a renewal that fails throws its error: no commit).
   */
  confirm(): Promise<void>;
  /** Stops the renewals (after the work, before the guarded commit); later answers are ignored. */
  stop(): void;
};

/** Starts the heartbeat of a lease just taken. */
export function holdLease(options: LeaseOptions): HeldLease {
  const { what, leaseMs, renew, now, log } = options;
  const controller = new AbortController();
  let leasedUntil = options.leasedUntil.getTime();
  let renewing = false;
  let stopped = false;
  const lose = () => {
    if (!controller.signal.aborted) controller.abort(new LeaseLostError(what));
  };
  const expired = () => now().getTime() >= leasedUntil;

  const tick = async () => {
    // One renewal at a time: a slow one is waited for, and its answer (or its error) decides.
    if (stopped || renewing || controller.signal.aborted) return;
    renewing = true;
    try {
      const until = await renew();
      if (stopped) return;
      if (until) leasedUntil = until.getTime();
      else lose();
    } catch (error) {
      if (stopped) return;
      log.warn({ err: (error as Error).message }, `could not renew the ${what} lease`);
      if (expired()) lose();
    } finally {
      renewing = false;
    }
  };
  const cancel = (options.every ?? everyInterval)(heartbeatEveryMs(leaseMs), tick);

  return {
    signal: controller.signal,
    leasedUntil: () => new Date(leasedUntil),
    async confirm() {
      controller.signal.throwIfAborted();
      const until = await renew();
      if (!until) {
        lose();
        throw controller.signal.reason;
      }
      leasedUntil = until.getTime();
    },
    stop() {
      stopped = true;
      cancel();
    },
  };
}

/** Whether `error` ended the work because the lease was lost (the error itself, or the reason the work was aborted). */
export function lostLease(error: unknown, lease: HeldLease): boolean {
  return error instanceof LeaseLostError || lease.signal.reason instanceof LeaseLostError;
}

export type LeaseSweep<Expired, Queued> = {
  /** Leases that ran out go back to `queued`, or to `failed` on the last attempt (one transaction, with their events). */
  expire: () => Promise<{ requeued: Expired[]; failed: Expired[] }>;
  /** Queued rows, each of which needs its BullMQ job. */
  queued: () => Promise<readonly Queued[]>;
  /** The row's BullMQ job id for its current attempt. */
  jobId: (row: Queued) => string;
  enqueue: (row: Queued, jobId: string) => Promise<unknown>;
};

/**
 * The sweep of a leased pool: expired leases first, then a job for every queued row whose BullMQ
 * job is missing (the API enqueues after commit and may have died between; docs/conventions.md: a sweeper
 * re-enqueues rows whose job went missing).
 */
export async function sweepLeases<Expired, Queued>(
  queue: Pick<Queue, 'getJobState'>,
  sweep: LeaseSweep<Expired, Queued>,
): Promise<{ requeued: Expired[]; failed: Expired[]; enqueued: number }> {
  const { requeued, failed } = await sweep.expire();
  let enqueued = 0;
  for (const row of await sweep.queued()) {
    const jobId = sweep.jobId(row);
    if ((await queue.getJobState(jobId)) !== 'unknown') continue;
    await sweep.enqueue(row, jobId);
    enqueued += 1;
  }
  return { requeued, failed, enqueued };
}
