import { afterAll, describe, expect, test } from 'bun:test';
import { Queue } from 'bullmq';
import { createLogger } from '../../shared/platform/logger.ts';
import { createWorkerRedis } from '../../shared/platform/redis.ts';
import { type Every, type HeldLease, heartbeatEveryMs, holdLease, LeaseLostError, lostLease, sweepLeases } from '../../workers/lease.ts';
import { failure, testClock } from '../helpers.ts';

/**
 * The lease kit of the leased pools (workers/lease.ts). The renewal is a plain function of ours
 * that answers what each test says, the clock is a test clock and the heartbeat's timer is driven
 * by hand, so every renewal happens exactly when a test calls it. The pools themselves run the kit
 * against the real tables in test/audit/audit-exports.test.ts and test/media/renders-worker.test.ts.
 */
const log = createLogger({ level: 'silent', name: 'lease-test' });
const LEASE_MS = 60_000;

/** A renewal that answers each call with the next of `answers` (a date, null, an error, or a promise). */
type Answer = Date | null | Error | Promise<Date | null>;

function lease(answers: Answer[] = []) {
  const clock = testClock('2024-01-01T00:00:00.000Z');
  const calls: Date[] = [];
  const timer = { everyMs: 0, tick: async () => {}, cancelled: false };
  const every: Every = (ms, tick) => {
    timer.everyMs = ms;
    timer.tick = tick;
    return () => {
      timer.cancelled = true;
    };
  };
  const held = holdLease({
    what: 'test',
    leasedUntil: new Date(clock.now().getTime() + LEASE_MS),
    leaseMs: LEASE_MS,
    renew: async () => {
      calls.push(clock.now());
      const answer = answers.shift();
      if (answer === undefined) throw new Error('the test gave no answer for this renewal');
      if (answer instanceof Error) throw answer;
      return answer;
    },
    now: clock.now,
    log,
    every,
  });
  const extended = () => new Date(clock.now().getTime() + LEASE_MS);
  return { held, clock, calls, timer, answers, extended };
}

/** A renewal that answers only when the test says so. */
function slowRenewal() {
  let answer: (until: Date | null) => void = () => {};
  const promise = new Promise<Date | null>((resolve) => (answer = resolve));
  return { promise, answer: (until: Date | null) => answer(until) };
}

function expectLost(held: HeldLease) {
  expect(held.signal.aborted).toBe(true);
  expect(held.signal.reason).toBeInstanceOf(LeaseLostError);
}

describe('the heartbeat', () => {
  test('renews every third of the lease, never more often than every 200 ms', () => {
    expect(heartbeatEveryMs(60_000)).toBe(20_000);
    expect(heartbeatEveryMs(1_000)).toBe(333);
    expect(heartbeatEveryMs(300)).toBe(200);
    expect(lease().timer.everyMs).toBe(20_000);
  });

  test('a renewal that succeeds moves the expiry and keeps the work going', async () => {
    const { held, clock, timer, answers, extended, calls } = lease();
    clock.advance(20_000);
    answers.push(extended());
    await timer.tick();
    expect(calls.length).toBe(1);
    expect(held.leasedUntil().getTime()).toBe(clock.now().getTime() + LEASE_MS);
    expect(held.signal.aborted).toBe(false);
  });

  test('a renewal answered "not yours" aborts the work at once, long before the lease would run out', async () => {
    const { held, clock, timer } = lease([null]);
    clock.advance(20_000);
    await timer.tick();
    expectLost(held);
    expect(lostLease(new Error('the write was aborted'), held)).toBe(true);
  });

  test('renewals that fail keep the work going until the last confirmed expiry has passed, then abort it', async () => {
    const { held, clock, timer, answers, extended } = lease();
    // One good renewal at 20 s: the lease now runs to 80 s.
    clock.advance(20_000);
    answers.push(extended());
    await timer.tick();
    const until = held.leasedUntil().getTime();
    // Then the database is unreachable.
    for (const at of [40_000, 60_000, 79_999]) {
      clock.set(new Date(Date.parse('2024-01-01T00:00:00.000Z') + at));
      answers.push(new Error('connection refused'));
      await timer.tick();
      expect(held.signal.aborted).toBe(false);
    }
    clock.set(new Date(until));
    answers.push(new Error('connection refused'));
    await timer.tick();
    expectLost(held);
  });

  test('a slow renewal is waited for: no second one is sent meanwhile, and its answer decides', async () => {
    const renewal = slowRenewal();
    const { held, clock, timer, calls } = lease([renewal.promise]);
    clock.advance(20_000);
    const pending = timer.tick();
    clock.advance(20_000);
    await timer.tick();
    expect(calls.length).toBe(1);
    renewal.answer(null);
    await pending;
    expectLost(held);
  });

  test('stop ends the renewals, and an answer that arrives after it changes nothing', async () => {
    const renewal = slowRenewal();
    const { held, clock, timer, calls } = lease([renewal.promise]);
    clock.advance(20_000);
    const pending = timer.tick();
    held.stop();
    expect(timer.cancelled).toBe(true);
    renewal.answer(null);
    await pending;
    expect(held.signal.aborted).toBe(false);
    await timer.tick();
    expect(calls.length).toBe(1);
  });
});

describe('the confirm before the commit', () => {
  test('renews once more and lets the commit go ahead while the lease is ours', async () => {
    const { held, clock, calls, answers, extended } = lease();
    clock.advance(50_000);
    answers.push(extended());
    await held.confirm();
    expect(calls.length).toBe(1);
    expect(held.leasedUntil().getTime()).toBe(clock.now().getTime() + LEASE_MS);
  });

  test('throws LeaseLostError, and aborts the work, when the renewal says the lease is no longer ours', async () => {
    const { held } = lease([null]);
    expect(await failure(held.confirm())).toBeInstanceOf(LeaseLostError);
    expect(held.signal.aborted).toBe(true);
  });

  test('throws LeaseLostError without asking again once the heartbeat has lost the lease', async () => {
    const { held, timer, calls } = lease([null]);
    await timer.tick();
    expect(await failure(held.confirm())).toBeInstanceOf(LeaseLostError);
    expect(calls.length).toBe(1);
  });

  test('passes a failed renewal on: nothing is committed on an unknown answer', async () => {
    const { held } = lease([new Error('connection refused')]);
    const error = await failure(held.confirm());
    expect((error as Error).message).toBe('connection refused');
    expect(lostLease(error, held)).toBe(false);
  });
});

describe('the sweep', () => {
  const connection = createWorkerRedis(process.env.REDIS_URL!, 'lease-test');
  const queue = new Queue('lease-test', { connection, prefix: `lease-test-${crypto.randomUUID()}` });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    connection.disconnect();
  });

  test('expires leases first, then enqueues a job for each queued row whose job is missing', async () => {
    await queue.add('run', {}, { jobId: 'row-a-1', delay: 60_000 });
    const order: string[] = [];
    const enqueued: string[] = [];
    const swept = await sweepLeases(queue, {
      expire: async () => {
        order.push('expire');
        return { requeued: ['row-c'], failed: ['row-d'] };
      },
      queued: async () => {
        order.push('queued');
        return [
          { id: 'row-a', attempts: 1 },
          { id: 'row-b', attempts: 2 },
        ];
      },
      jobId: (row) => `${row.id}-${row.attempts}`,
      enqueue: async (row, jobId) => {
        enqueued.push(jobId);
        await queue.add('run', { id: row.id }, { jobId, delay: 60_000 });
      },
    });
    expect(order).toEqual(['expire', 'queued']);
    expect(enqueued).toEqual(['row-b-2']);
    expect(swept).toEqual({ requeued: ['row-c'], failed: ['row-d'], enqueued: 1 });
  });
});
