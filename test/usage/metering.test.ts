import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { OPERATIONS } from '../../shared/http/operations.ts';
import { adminCreateKey, adminUpdateWorkspace } from '../../shared/identity/admin.ts';
import { hashKey } from '../../shared/identity/api-keys.ts';
import { KEY_INVALIDATION_CHANNEL } from '../../shared/identity/key-cache.ts';
import { createKey, createTestApp, eventually, seedFreshFxRates, signUp, type TestApp, type TestClock, testClock, workspaceWithKey } from '../helpers.ts';
import { type PrivateRedis, startPrivateRedis } from '../private-redis.ts';

/** Usage metering (docs/design.md §5): budgets per workspace, weighted units, RateLimit headers, 429/503. */

const t = createTestApp();
afterAll(() => t.close());

/** A test app on its own injected clock, closed when `body` ends. */
async function withClock(start: string, body: (t: TestApp, clock: TestClock) => Promise<void>): Promise<void> {
  const clock = testClock(start);
  const app = createTestApp({ now: clock.now });
  try {
    await body(app, clock);
  } finally {
    await app.close();
  }
}

type Windows = Record<string, Record<string, number>>;

/** Parses `"minute";r=1;t=2, "day";q=3;w=4` into `{minute:{r:1,t:2}, day:{q:3,w:4}}`. */
function parseWindows(header: string | null): Windows {
  const windows: Windows = {};
  for (const item of (header ?? '').split(',')) {
    const [name, ...params] = item.trim().split(';');
    if (!name) continue;
    windows[name.replaceAll('"', '')] = Object.fromEntries(
      params.map((param) => {
        const [key, value] = param.split('=');
        return [key!, Number(value)];
      }),
    );
  }
  return windows;
}

const rateLimit = (response: Response) => parseWindows(response.headers.get('ratelimit'));
const rateLimitPolicy = (response: Response) => parseWindows(response.headers.get('ratelimit-policy'));

/** Asserts the shared error body (docs/design.md §6) and returns it. */
async function expectError(response: Response, status: number, code: string) {
  expect(response.status).toBe(status);
  expect(response.headers.get('content-type')).toContain('application/json');
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string; details?: unknown } };
  expect(Object.keys(body)).toEqual(['error']);
  expect(body.error.code).toBe(code);
  expect(typeof body.error.message).toBe('string');
  expect(body.error.message.length).toBeGreaterThan(0);
  expect(body.error.request_id).toBe(response.headers.get('x-request-id')!);
  return body.error;
}

type UsageBody = {
  workspace: { id: string; tier: string };
  budgets: Record<'minute' | 'day', { limit: number; used: number; remaining: number; resets_at: string }>;
  key: { id: string; day: string; operations: { operation: string; requests: number; units: number; errors: number }[] };
  unit_weights: Record<string, number>;
};

describe('RateLimit headers', () => {
  test('a free-tier response announces 120 units a minute and 20 000 a UTC day, and what remains', async () => {
    await withClock('2026-03-01T12:00:15Z', async (app) => {
      const ws = await workspaceWithKey(app);
      const first = await app.request('/v2/me', { headers: ws.keyHeaders });
      expect(first.status).toBe(200);
      expect(first.headers.get('ratelimit-policy')).toBe('"minute";q=120;w=60, "day";q=20000;w=86400');
      expect(rateLimit(first)).toEqual({ minute: { r: 119, t: 45 }, day: { r: 19999, t: 43185 } });

      const second = await app.request('/v2/me', { headers: ws.keyHeaders });
      expect(rateLimit(second)).toEqual({ minute: { r: 118, t: 45 }, day: { r: 19998, t: 43185 } });
    });
  });

  test('every metered operation carries both headers, including /v2/usage and /v2/audit/events', async () => {
    const ws = await workspaceWithKey(t);
    for (const path of ['/v2/me', '/v2/usage', '/v2/audit/events']) {
      const response = await t.request(path, { headers: ws.keyHeaders });
      expect(response.status).toBe(200);
      expect(rateLimitPolicy(response)).toEqual({ minute: { q: 120, w: 60 }, day: { q: 20000, w: 86400 } });
      const windows = rateLimit(response);
      expect(windows.minute!.t).toBeGreaterThanOrEqual(1);
      expect(windows.minute!.t).toBeLessThanOrEqual(60);
      expect(windows.day!.t).toBeGreaterThanOrEqual(1);
      expect(windows.day!.t).toBeLessThanOrEqual(86400);
    }
  });

  test('a workspace with custom budgets announces its own quotas', async () => {
    await withClock('2026-03-01T08:30:40Z', async (app) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 7, day: 50 } });
      const response = await app.request('/v2/me', { headers: ws.keyHeaders });
      expect(response.status).toBe(200);
      expect(response.headers.get('ratelimit-policy')).toBe('"minute";q=7;w=60, "day";q=50;w=86400');
      expect(rateLimit(response)).toEqual({ minute: { r: 6, t: 20 }, day: { r: 49, t: 55760 } });
    });
  });

  test('a pro workspace gets the pro budgets', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const response = await t.request('/v2/me', { headers: ws.keyHeaders });
    expect(response.status).toBe(200);
    expect(rateLimitPolicy(response)).toEqual({ minute: { q: 1200, w: 60 }, day: { q: 1000000, w: 86400 } });
  });
});

describe('budget exhaustion', () => {
  test('requests beyond the minute budget get 429 usage_limit_exceeded with Retry-After until the next minute', async () => {
    await withClock('2026-03-01T12:00:15Z', async (app, clock) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 3, day: 1000 } });
      for (let i = 0; i < 3; i += 1) expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);

      const refused = await app.request('/v2/me', { headers: ws.keyHeaders });
      const error = await expectError(refused, 429, 'usage_limit_exceeded');
      expect(error.message).toContain('per-minute');
      expect(refused.headers.get('retry-after')).toBe('45');
      expect(rateLimit(refused)).toEqual({ minute: { r: 0, t: 45 }, day: { r: 997, t: 43185 } });

      // Later in the same minute: still refused, Retry-After counts down.
      clock.set('2026-03-01T12:00:50Z');
      const stillRefused = await app.request('/v2/me', { headers: ws.keyHeaders });
      await expectError(stillRefused, 429, 'usage_limit_exceeded');
      expect(stillRefused.headers.get('retry-after')).toBe('10');

      // The next minute starts with a full minute budget; refused requests debited nothing.
      clock.set('2026-03-01T12:01:00Z');
      const next = await app.request('/v2/me', { headers: ws.keyHeaders });
      expect(next.status).toBe(200);
      expect(rateLimit(next)).toEqual({ minute: { r: 2, t: 60 }, day: { r: 996, t: 43140 } });
    });
  });

  test('the budget is shared by every key of a workspace but not with other workspaces', async () => {
    await withClock('2026-03-01T12:00:00Z', async (app) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 3, day: 1000 } });
      const second = await adminCreateKey(app.deps.sql, { workspaceId: ws.workspace.id, label: 'second' });
      const secondHeaders = { 'x-api-key': second.key };
      const other = await workspaceWithKey(app, { budgets: { minute: 3, day: 1000 } });

      expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      const third = await app.request('/v2/me', { headers: secondHeaders });
      expect(third.status).toBe(200);
      expect(rateLimit(third).minute!.r).toBe(0);

      await expectError(await app.request('/v2/me', { headers: secondHeaders }), 429, 'usage_limit_exceeded');
      await expectError(await app.request('/v2/me', { headers: ws.keyHeaders }), 429, 'usage_limit_exceeded');

      // Another workspace on the same budgets is untouched.
      const unaffected = await app.request('/v2/me', { headers: other.keyHeaders });
      expect(unaffected.status).toBe(200);
      expect(rateLimit(unaffected).minute!.r).toBe(2);
    });
  });

  test('concurrent requests are debited one by one: exactly the budget passes, each with its own remaining count', async () => {
    await withClock('2026-03-01T12:00:15Z', async (app) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 5, day: 1000 } });
      const other = await workspaceWithKey(app, { budgets: { minute: 5, day: 1000 } });
      // Sent together, so they share metering calls (one script call per event-loop turn).
      const responses = await Promise.all([
        ...Array.from({ length: 12 }, () => app.request('/v2/me', { headers: ws.keyHeaders })),
        app.request('/v2/me', { headers: other.keyHeaders }),
      ]);
      const mine = responses.slice(0, 12);
      const passed = mine.filter((response) => response.status === 200);
      expect(passed.length).toBe(5);
      expect(passed.map((response) => rateLimit(response).minute!.r).sort()).toEqual([0, 1, 2, 3, 4]);
      for (const refused of mine.filter((response) => response.status !== 200)) await expectError(refused, 429, 'usage_limit_exceeded');
      // Another workspace in the same calls keeps its own budget.
      expect(responses[12]!.status).toBe(200);
      expect(rateLimit(responses[12]!).minute!.r).toBe(4);
    });
  });

  test('an exhausted UTC-day budget answers 429 until midnight UTC, then requests pass again', async () => {
    const clock = testClock('2026-03-01T23:59:30Z');
    const app = createTestApp({ now: clock.now });
    try {
      const ws = await workspaceWithKey(app, { budgets: { minute: 100, day: 3 } });
      for (let i = 0; i < 3; i += 1) expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);

      const refused = await app.request('/v2/me', { headers: ws.keyHeaders });
      const error = await expectError(refused, 429, 'usage_limit_exceeded');
      expect(error.message).toContain('UTC-day');
      expect(refused.headers.get('retry-after')).toBe('30');
      expect(rateLimit(refused)).toEqual({ minute: { r: 97, t: 30 }, day: { r: 0, t: 30 } });

      clock.set('2026-03-01T23:59:58Z');
      const later = await app.request('/v2/me', { headers: ws.keyHeaders });
      await expectError(later, 429, 'usage_limit_exceeded');
      expect(later.headers.get('retry-after')).toBe('2');

      clock.set('2026-03-02T00:00:05Z');
      const nextDay = await app.request('/v2/me', { headers: ws.keyHeaders });
      expect(nextDay.status).toBe(200);
      expect(rateLimit(nextDay)).toEqual({ minute: { r: 99, t: 55 }, day: { r: 2, t: 86395 } });
    } finally {
      await app.close();
    }
  });

  test('when both windows are exhausted, Retry-After points at the day reset, not at a minute that would be refused too', async () => {
    await withClock('2026-03-01T12:00:15Z', async (app, clock) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 3, day: 3 } });
      for (let i = 0; i < 3; i += 1) expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      const refused = await app.request('/v2/me', { headers: ws.keyHeaders });
      const error = await expectError(refused, 429, 'usage_limit_exceeded');
      expect(error.message).toContain('UTC-day');
      expect(refused.headers.get('retry-after')).toBe('43185');

      // Honouring a shorter Retry-After would only have earned another 429.
      clock.advance(60_000);
      await expectError(await app.request('/v2/me', { headers: ws.keyHeaders }), 429, 'usage_limit_exceeded');
    });
  });

  test('a new minute does not restore an exhausted UTC-day budget', async () => {
    await withClock('2026-03-01T10:00:00Z', async (app, clock) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 100, day: 2 } });
      for (let i = 0; i < 2; i += 1) expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      clock.advance(60_000);
      const refused = await app.request('/v2/me', { headers: ws.keyHeaders });
      const error = await expectError(refused, 429, 'usage_limit_exceeded');
      expect(error.message).toContain('UTC-day');
      // 10:01:00 → midnight is 13 h 59 min away.
      expect(refused.headers.get('retry-after')).toBe(String(13 * 3600 + 59 * 60));
    });
  });
});

describe('weights and GET /v2/usage', () => {
  test('each operation is debited its unit weight, and a request heavier than what remains is refused', async () => {
    await withClock('2026-03-01T12:00:10Z', async (app) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 4, day: 1000 } });
      const me = await app.request('/v2/me', { headers: ws.keyHeaders });
      expect(rateLimit(me).minute!.r).toBe(3);
      const audit = await app.request('/v2/audit/events', { headers: ws.keyHeaders });
      expect(audit.status).toBe(200);
      expect(rateLimit(audit).minute!.r).toBe(1); // audit_events.list weighs 2

      // One unit left: another 2-unit request is refused, a 1-unit one still passes.
      await expectError(await app.request('/v2/audit/events', { headers: ws.keyHeaders }), 429, 'usage_limit_exceeded');
      const last = await app.request('/v2/me', { headers: ws.keyHeaders });
      expect(last.status).toBe(200);
      expect(rateLimit(last).minute!.r).toBe(0);
    });
  });

  test('GET /v2/usage costs one unit and reports both windows, unit weights and the calling key’s counters', async () => {
    await withClock('2026-03-01T12:00:15Z', async (app) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 50, day: 500 } });
      const otherKey = await adminCreateKey(app.deps.sql, { workspaceId: ws.workspace.id, label: 'other' });

      expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      expect((await app.request('/v2/audit/events', { headers: ws.keyHeaders })).status).toBe(200);
      // Admitted (and debited) but failed in the handler: counted as an error of its operation.
      await expectError(await app.request('/v2/audit/events?cursor=not-a-cursor', { headers: ws.keyHeaders }), 400, 'invalid_cursor');
      // Error counts are written after the response; wait for them without spending units.
      await eventually(async () => {
        const { counters } = await app.deps.meter.keyCounters({ workspaceId: ws.workspace.id, keyId: ws.keyId, now: app.deps.now() });
        return counters.find((row) => row.operation === 'audit_events.list')?.errors === 1 ? true : undefined;
      });

      const response = await app.request('/v2/usage', { headers: ws.keyHeaders });
      expect(response.status).toBe(200);
      const body = (await response.json()) as UsageBody;
      expect(body.workspace).toEqual({ id: ws.workspace.id, tier: 'free' });
      // 1 + 1 + 2 + 2 + this request's own unit.
      expect(body.budgets).toEqual({
        minute: { limit: 50, used: 7, remaining: 43, resets_at: '2026-03-01T12:01:00.000Z' },
        day: { limit: 500, used: 7, remaining: 493, resets_at: '2026-03-02T00:00:00.000Z' },
      });
      expect(rateLimit(response)).toEqual({ minute: { r: 43, t: 45 }, day: { r: 493, t: 43185 } });
      expect(body.key.id).toBe(ws.keyId);
      expect(body.key.day).toBe('2026-03-01');
      expect(body.key.operations).toEqual([
        { operation: 'audit_events.list', requests: 2, units: 4, errors: 1 },
        { operation: 'me.get', requests: 2, units: 2, errors: 0 },
        { operation: 'usage.get', requests: 1, units: 1, errors: 0 },
      ]);

      // Weights cover exactly the API-key operations of the operation table.
      const metered = OPERATIONS.filter((operation) => operation.auth === 'api_key');
      expect(Object.keys(body.unit_weights).sort()).toEqual(metered.map((operation) => operation.id).sort());
      for (const operation of metered) {
        expect(body.unit_weights[operation.id]).toBe(operation.units);
        expect(operation.units).toBeGreaterThan(0);
      }
      expect(body.unit_weights['usage.get']).toBe(1);

      // Another key of the workspace: shared budgets, its own counters.
      const other = await app.request('/v2/usage', { headers: { 'x-api-key': otherKey.key } });
      expect(other.status).toBe(200);
      const otherBody = (await other.json()) as UsageBody;
      expect(otherBody.budgets.minute.used).toBe(8);
      expect(otherBody.budgets.day.used).toBe(8);
      expect(otherBody.key.id).toBe(otherKey.id);
      expect(otherBody.key.operations).toEqual([{ operation: 'usage.get', requests: 1, units: 1, errors: 0 }]);
    });
  });

  test('a request refused for budget counts as a request and an error of its key but debits no units', async () => {
    await withClock('2026-03-01T12:00:00Z', async (app, clock) => {
      const ws = await workspaceWithKey(app, { budgets: { minute: 2, day: 1000 } });
      expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      await expectError(await app.request('/v2/me', { headers: ws.keyHeaders }), 429, 'usage_limit_exceeded');

      clock.advance(60_000); // same UTC day, fresh minute
      const response = await app.request('/v2/usage', { headers: ws.keyHeaders });
      expect(response.status).toBe(200);
      const body = (await response.json()) as UsageBody;
      expect(body.budgets.minute.used).toBe(1);
      expect(body.budgets.day.used).toBe(3);
      expect(body.key.operations).toEqual([
        { operation: 'me.get', requests: 3, units: 2, errors: 1 },
        { operation: 'usage.get', requests: 1, units: 1, errors: 0 },
      ]);
    });
  });

  test('per-key counters start afresh on a new UTC day', async () => {
    await withClock('2026-03-01T23:59:50Z', async (app, clock) => {
      const ws = await workspaceWithKey(app);
      expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
      clock.set('2026-03-02T00:00:10Z');
      const body = (await (await app.request('/v2/usage', { headers: ws.keyHeaders })).json()) as UsageBody;
      expect(body.key.day).toBe('2026-03-02');
      expect(body.key.operations).toEqual([{ operation: 'usage.get', requests: 1, units: 1, errors: 0 }]);
      expect(body.budgets.day).toEqual({ limit: 20000, used: 1, remaining: 19999, resets_at: '2026-03-03T00:00:00.000Z' });
    });
  });
});

describe('authentication and authorisation', () => {
  test('a missing key gets 401 unauthorized and is not metered', async () => {
    const response = await t.request('/v2/me');
    await expectError(response, 401, 'unauthorized');
    expect(response.headers.get('ratelimit')).toBeNull();
    await expectError(await t.request('/v2/usage'), 401, 'unauthorized');
  });

  test('an unknown or malformed key gets 401 unauthorized', async () => {
    const unknown = await t.request('/v2/me', { headers: { 'x-api-key': `cs2_${'x'.repeat(40)}` } });
    const error = await expectError(unknown, 401, 'unauthorized');
    expect(error.message).toContain('invalid');
    await expectError(await t.request('/v2/usage', { headers: { 'x-api-key': 'k'.repeat(5000) } }), 401, 'unauthorized');
  });

  test('a revoked key gets 401 unauthorized', async () => {
    const user = await signUp(t);
    const key = await createKey(t, user.token, { label: 'soon revoked' });
    expect((await t.request('/v2/me', { headers: { 'x-api-key': key.key } })).status).toBe(200);
    const revoked = await t.request(`/v1/me/keys/${key.id}`, { method: 'DELETE', headers: user.auth });
    expect(revoked.status).toBe(204);
    const response = await t.request('/v2/me', { headers: { 'x-api-key': key.key } });
    const error = await expectError(response, 401, 'unauthorized');
    expect(error.message).toContain('revoked');
  });

  test('a key without usage:read gets 403 insufficient_scope on /v2/usage, spending no units', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['catalog:read'] });
    const denied = await t.request('/v2/usage', { headers: ws.keyHeaders });
    const error = await expectError(denied, 403, 'insufficient_scope');
    expect(error.details).toEqual([{ field: 'scope', message: 'usage:read' }]);
    // /v2/me needs no scope; only its own unit has been spent.
    const me = await t.request('/v2/me', { headers: ws.keyHeaders });
    expect(me.status).toBe(200);
    expect(rateLimit(me).day!.r).toBe(19999);
  });

  test('a key of a suspended workspace gets 403 workspace_suspended, and works again when lifted', async () => {
    const ws = await workspaceWithKey(t);
    expect((await t.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200); // now cached

    const hashes = await adminUpdateWorkspace(t.deps.sql, ws.workspace.id, { suspended: true });
    expect(hashes).toContain(hashKey(ws.key));
    for (const hash of hashes ?? []) t.deps.keys.invalidate(hash);
    await expectError(await t.request('/v2/me', { headers: ws.keyHeaders }), 403, 'workspace_suspended');
    await expectError(await t.request('/v2/usage', { headers: ws.keyHeaders }), 403, 'workspace_suspended');

    await adminUpdateWorkspace(t.deps.sql, ws.workspace.id, { suspended: false });
    for (const hash of hashes ?? []) t.deps.keys.invalidate(hash);
    expect((await t.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
  });

  test('a suspension announced on the invalidation channel reaches a running API without waiting for the cache TTL', async () => {
    const ws = await workspaceWithKey(t);
    expect((await t.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200); // now cached
    const hashes = (await adminUpdateWorkspace(t.deps.sql, ws.workspace.id, { suspended: true })) ?? [];
    // What the admin CLI does: announce each key hash over Redis pub/sub.
    for (const hash of hashes) await t.deps.redis.publish(KEY_INVALIDATION_CHANNEL, hash);
    const response = await eventually(async () => {
      const candidate = await t.request('/v2/me', { headers: ws.keyHeaders });
      return candidate.status === 403 ? candidate : undefined;
    }, 5_000);
    await expectError(response, 403, 'workspace_suspended');
  });
});

describe('Redis stopped mid-run', () => {
  let redis: PrivateRedis;
  let app: TestApp;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    app = createTestApp({ config: { REDIS_URL: redis.url, SOURCES: '' } });
    await eventually(async () => (app.deps.redis.status === 'ready' ? true : undefined));
    // /health is 200 only with fresh exchange rates too (the always-on fx source, docs/design.md §14).
    await seedFreshFxRates(app.deps.sql);
  });

  afterAll(async () => {
    await redis?.kill();
    await app?.close();
  });

  test('metered endpoints answer 503 usage_unavailable quickly while public endpoints keep answering', async () => {
    const ws = await workspaceWithKey(app);
    const before = await app.request('/v2/me', { headers: ws.keyHeaders });
    expect(before.status).toBe(200);
    expect(rateLimit(before).minute!.r).toBe(119);

    // Killed like a crash; the very next requests must not hang on the dead connection.
    await redis.kill();

    for (const path of ['/v2/me', '/v2/usage', '/v2/audit/events']) {
      const started = performance.now();
      const response = await app.request(path, { headers: ws.keyHeaders });
      const elapsed = performance.now() - started;
      await expectError(response, 503, 'usage_unavailable');
      expect(elapsed).toBeLessThan(3_000);
    }

    const health = await app.request('/v2/health');
    expect(health.status).toBe(200);
    expect(((await health.json()) as { status: string }).status).toBe('ok');

    const report = await app.request('/health');
    expect(report.status).toBe(200);
    expect(((await report.json()) as { status: string }).status).toBe('up');

    const started = performance.now();
    const status = await app.request('/v2/status');
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(status.status).toBe(200);
    const body = (await status.json()) as { status: string; degraded: string[]; components: { redis: { status: string } } };
    expect(body.status).toBe('degraded');
    expect(body.degraded).toContain('redis');
    expect(body.components.redis.status).toBe('down');
  });

  test('metered endpoints answer again once Redis is back, without restarting the API', async () => {
    await redis.restart();
    const ws = await workspaceWithKey(app);
    // The restarted server is empty: budgets start afresh and the metering script is loaded again.
    const me = await eventually(async () => {
      const candidate = await app.request('/v2/me', { headers: ws.keyHeaders });
      return candidate.status === 200 ? candidate : undefined;
    }, 10_000);
    expect(rateLimit(me).minute!.r).toBe(119);
    const usage = await app.request('/v2/usage', { headers: ws.keyHeaders });
    expect(usage.status).toBe(200);
    expect(((await usage.json()) as UsageBody).key.operations).toEqual([
      { operation: 'me.get', requests: 1, units: 1, errors: 0 },
      { operation: 'usage.get', requests: 1, units: 1, errors: 0 },
    ]);
  });

  test('a Redis that stops answering gets 503 usage_unavailable within about a second, and service resumes with it', async () => {
    const ws = await workspaceWithKey(app);
    expect((await app.request('/v2/me', { headers: ws.keyHeaders })).status).toBe(200);
    redis.pause();
    try {
      const started = performance.now();
      const response = await app.request('/v2/me', { headers: ws.keyHeaders });
      const elapsed = performance.now() - started;
      await expectError(response, 503, 'usage_unavailable');
      // The 1 s command timeout, with room for a busy machine.
      expect(elapsed).toBeLessThan(2_000);
    } finally {
      redis.resume();
    }
    await eventually(async () => ((await app.request('/v2/me', { headers: ws.keyHeaders })).status === 200 ? true : undefined), 10_000);
  });
});
