import { afterAll, describe, expect, test } from 'bun:test';
import { CounterRedis } from '../../shared/platform/redis-counters.ts';
import { type DebitResult, UsageMeter } from '../../shared/usage/metering.ts';
import { createTestApp, errorOf, testConfig, workspaceWithKey } from '../helpers.ts';

/**
 * Metering under load with a healthy Redis (issue 29): a keyed request must never get 503
 * `usage_unavailable` because its process or its Redis was busy. The meter here is the API's own
 * (Bun's client in shared/platform/redis-counters.ts, the batched debit of shared/usage/metering.ts)
 * on the suite's real Redis; only the load around it is made up.
 */

const config = testConfig();
const BUDGETS = { minute: 1_000_000, day: 10_000_000 };

/** Blocks the event loop like a request handler doing `ms` of synchronous work (a large body built or parsed). */
function block(ms: number): void {
  const end = performance.now() + ms;
  while (performance.now() < end) {
    // busy: nothing else in this process runs meanwhile
  }
}

/** The rejections among settled debits, as text (an empty list when every debit went through). */
function failures(outcomes: PromiseSettledResult<DebitResult>[]): string[] {
  return outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [String((outcome.reason as Error)?.message ?? outcome.reason)] : []));
}

describe('metering under load, Redis healthy', () => {
  const counters = new CounterRedis(config.REDIS_URL);
  const meter = new UsageMeter(counters);
  afterAll(() => counters.close());

  test('a command whose write the event loop holds back past the command timeout (blocked in the turn that sent it) is answered, not timed out', async () => {
    expect(await counters.ready()).toBe(true);
    for (let round = 0; round < 3; round += 1) {
      const command = counters.command('PING', []);
      // Bun writes a command at the end of the turn that sent it: the 1 s is gone before Redis has it.
      block(1_300);
      expect(await command).toBe('PONG');
    }
  }, 30_000);

  test('hundreds of concurrent requests whose handlers each do a few ms of work once admitted: none is refused for a timeout', async () => {
    expect(await counters.ready()).toBe(true);
    // One instant for every debit: the windows' keys do not move with the clock during the test.
    const now = new Date();
    const workspaces = Array.from({ length: 16 }, () => ({ workspaceId: crypto.randomUUID(), keyId: crypto.randomUUID() }));
    const requests = 768;
    // Like the API under load: while a debit call is out the next requests' debits queue up, and when
    // its reply comes, the next batch is sent and then the admitted requests' handlers run (here 5 ms
    // of synchronous work each, 256 of them: longer than the 1 s command timeout in all).
    const outcomes = await Promise.allSettled(
      Array.from({ length: requests }, (_, index) =>
        meter.debit({ ...workspaces[index % workspaces.length]!, operation: 'me.get', units: 1, budgets: BUDGETS, now }).then((result) => {
          block(5);
          return result;
        }),
      ),
    );
    expect(failures(outcomes)).toEqual([]);
    // Each debit was applied exactly once: a workspace's day counter went 1, 2, … with no gap or repeat.
    const replies = await Promise.all(workspaces.map((workspace) => meter.debit({ ...workspace, operation: 'me.get', units: 1, budgets: BUDGETS, now })));
    expect(replies.map((reply) => reply.day.used)).toEqual(workspaces.map(() => requests / workspaces.length + 1));
  }, 60_000);
});

describe('keyed requests under load, Redis healthy', () => {
  // A keyed route whose handler does 5 ms of synchronous work, as a request that parses, validates
  // and answers a large body does; metered like every keyed route (operation me.get, one unit).
  const t = createTestApp({
    extend: (app) =>
      app.get(
        '/test/busy',
        () => {
          block(5);
          return { ok: true };
        },
        { operation: 'me.get', detail: { hide: true } },
      ),
  });
  afterAll(() => t.close());

  test('600 concurrent keyed requests to a busy handler: every one is answered 200, none 503 usage_unavailable', async () => {
    const workspaces = await Promise.all(Array.from({ length: 4 }, () => workspaceWithKey(t, { budgets: { minute: 100_000, day: 1_000_000 } })));
    // Keys looked up once, as on a running API: what follows is the debit and the handler.
    for (const ws of workspaces) expect((await t.request('/test/busy', { headers: ws.keyHeaders })).status).toBe(200);
    const responses = await Promise.all(
      Array.from({ length: 600 }, (_, index) => t.request('/test/busy', { headers: workspaces[index % workspaces.length]!.keyHeaders })),
    );
    const refused = await Promise.all(
      responses.filter((response) => response.status !== 200).map(async (response) => `${response.status} ${(await errorOf(response)).code}`),
    );
    expect(refused).toEqual([]);
  }, 60_000);
});

describe('debits that cannot fail one another, Redis healthy', () => {
  const counters = new CounterRedis(config.REDIS_URL);
  const meter = new UsageMeter(counters);
  const admin = new Bun.RedisClient(config.REDIS_URL);
  afterAll(() => {
    counters.close();
    admin.close();
  });

  test('a connection the server closes (an idle timeout, a proxy, a failover, CLIENT KILL): the debits of that moment wait for the reconnect and go through', async () => {
    expect(await counters.ready()).toBe(true);
    const now = new Date();
    const workspaces = Array.from({ length: 10 }, () => ({ workspaceId: crypto.randomUUID(), keyId: crypto.randomUUID() }));
    const debits = (count: number) =>
      Array.from({ length: count }, (_, index) =>
        meter.debit({ ...workspaces[index % workspaces.length]!, operation: 'me.get', units: 1, budgets: BUDGETS, now }),
      );
    for (let round = 0; round < 3; round += 1) {
      // Closed by the server just before the debits: the link is seen down, or found dead by the first call.
      const id = String(await counters.command('CLIENT', ['ID']));
      expect(await admin.send('CLIENT', ['KILL', 'ID', id])).toBe(1);
      expect(failures(await Promise.allSettled(debits(300)))).toEqual([]);
      // Closed with the debits' call on its way: the kill and the call reach the server in either order.
      const again = String(await counters.command('CLIENT', ['ID']));
      const pending = debits(300);
      const killed = admin.send('CLIENT', ['KILL', 'ID', again]);
      expect(failures(await Promise.allSettled(pending))).toEqual([]);
      expect(await killed).toBe(1);
    }
  }, 30_000);

  test('a debit the script cannot read fails alone: the others of its batch are debited', async () => {
    expect(await counters.ready()).toBe(true);
    const now = new Date();
    const workspace = { workspaceId: crypto.randomUUID(), keyId: crypto.randomUUID() };
    const good = Array.from({ length: 200 }, () => meter.debit({ ...workspace, operation: 'me.get', units: 1, budgets: BUDGETS, now }));
    // A budget that is no whole number (none can be today: the columns are integers) travels in the same batch.
    const bad = meter.debit({ ...workspace, operation: 'me.get', units: 1, budgets: { minute: 1.5, day: 10 }, now }).then(
      () => 'debited',
      (error: Error) => error.message,
    );
    const more = Array.from({ length: 200 }, () => meter.debit({ ...workspace, operation: 'me.get', units: 1, budgets: BUDGETS, now }));
    expect(failures(await Promise.allSettled([...good, ...more]))).toEqual([]);
    expect(await bad).toContain('not readable');
    const next = await meter.debit({ ...workspace, operation: 'me.get', units: 1, budgets: BUDGETS, now });
    expect(next.day.used).toBe(401);
  });
});
