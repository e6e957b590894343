import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { catalogItemCount } from '../../shared/catalog/repository.ts';
import { saveRateDays } from '../../shared/fx/repository.ts';
import { OPERATIONS } from '../../shared/http/operations.ts';
import { POOLS } from '../../shared/jobs/queues.ts';
import { generateItemFiles } from '../../shared/media/generate-item-files.ts';
import { createTestApp, errorOf, eventually, seedFreshFxRates, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';
import { freePort } from '../private-redis.ts';

type MediaStatusBody = { components: { media: unknown }; degraded: string[] };

/** Public endpoints: /health, /v2/health, /v2/status, /v2/meta/*, OpenAPI and docs, request ids. */

// A webhook secret key, so every built operation is `production` here (its absence is tested in test/webhooks/webhooks-api.test.ts).
const WEBHOOK_SECRET_KEY = Buffer.alloc(32, 7).toString('base64');
// A Steam Web API key so profiles.get is listed as built (its own dependency is checked below).
const t = createTestApp({ config: { SOURCES: '', WEBHOOK_SECRET_KEY, STEAM_WEB_API_KEY: 'status-test-key' } });
beforeAll(async () => {
  // A fresh client connects asynchronously; status checks below expect a connected Redis.
  await eventually(async () => (t.deps.redis.status === 'ready' ? true : undefined));
  // The fx source (always on, docs/design.md §14) counts on /health like a source: fresh rates here, its own
  // states are tested in test/fx/fx.test.ts.
  await seedFreshFxRates(t.deps.sql);
});
afterAll(() => t.close());

const randomSuffix = () => `${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
const uniqueSource = () => `skinport_${randomSuffix()}`;

type HealthReport = {
  status: string;
  sources: Record<string, { updated_at: string | null; status: string; unknown_names: number | null; rows_skipped: number | null }>;
  fx: { status: string };
  stats: { items: number };
};
const freshFx = expect.objectContaining({ status: 'fresh', source: 'ecb' });

async function withApp(options: Parameters<typeof createTestApp>[0], body: (app: TestApp) => Promise<void>): Promise<void> {
  const app = createTestApp(options);
  try {
    await body(app);
  } finally {
    await app.close();
  }
}

// Other suites load the catalog into the shared database, so /health's item count is whatever it holds.
describe('GET /health', () => {
  test('with no enabled sources it answers 200 up with no sources and the catalog item count', async () => {
    const response = await t.request('/health');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ status: 'up', sources: {}, fx: freshFx, stats: { items: await catalogItemCount(t.deps.sql) } });
  });

  test('an enabled source that never succeeded makes it 503 with the same body shape', async () => {
    const source = uniqueSource();
    await withApp({ config: { SOURCES: source } }, async (app) => {
      const response = await app.request('/health');
      expect(response.status).toBe(503);
      const body = (await response.json()) as HealthReport;
      expect(Object.keys(body).sort()).toEqual(['fx', 'sources', 'stats', 'status']);
      expect(body).toEqual({
        status: 'degraded',
        sources: { [source]: { updated_at: null, status: 'never_succeeded', unknown_names: null, rows_skipped: null } },
        fx: freshFx,
        stats: { items: await catalogItemCount(t.deps.sql) },
      });
    });
  });

  test('a fresh source makes it 200, and the same source gone stale makes it 503 stale', async () => {
    const source = uniqueSource();
    await withApp({ config: { SOURCES: source } }, async (app) => {
      try {
        const [row] = await app.deps.sql<{ last_success_at: Date }[]>`
          insert into price_sources (name, last_success_at, stale_after_seconds, last_unknown_names, last_rows_skipped)
          values (${source}, now(), 600, 12, 3) returning last_success_at`;
        const fresh = await app.request('/health');
        expect(fresh.status).toBe(200);
        expect(await fresh.json()).toEqual({
          status: 'up',
          sources: { [source]: { updated_at: row!.last_success_at.toISOString(), status: 'fresh', unknown_names: 12, rows_skipped: 3 } },
          fx: freshFx,
          stats: { items: await catalogItemCount(t.deps.sql) },
        });

        const [old] = await app.deps.sql<{ last_success_at: Date }[]>`
          update price_sources set last_success_at = now() - interval '11 minutes' where name = ${source} returning last_success_at`;
        const stale = await app.request('/health');
        expect(stale.status).toBe(503);
        expect(await stale.json()).toEqual({
          status: 'degraded',
          sources: { [source]: { updated_at: old!.last_success_at.toISOString(), status: 'stale', unknown_names: 12, rows_skipped: 3 } },
          fx: freshFx,
          stats: { items: await catalogItemCount(t.deps.sql) },
        });
      } finally {
        await app.deps.sql`delete from price_sources where name = ${source}`;
      }
    });
  });

  test('one stale source among fresh ones is enough for 503, and every enabled source is reported', async () => {
    const fresh = uniqueSource();
    const never = uniqueSource();
    await withApp({ config: { SOURCES: `${fresh},${never}` } }, async (app) => {
      try {
        await app.deps.sql`insert into price_sources (name, last_success_at, stale_after_seconds) values (${fresh}, now(), 600)`;
        const response = await app.request('/health');
        expect(response.status).toBe(503);
        const body = (await response.json()) as HealthReport;
        expect(body.status).toBe('degraded');
        expect(Object.keys(body.sources).sort()).toEqual([fresh, never].sort());
        expect(body.sources[fresh]!.status).toBe('fresh');
        expect(body.sources[never]!.status).toBe('never_succeeded');
      } finally {
        await app.deps.sql`delete from price_sources where name = ${fresh}`;
      }
    });
  });
});

type StatusBody = {
  status: 'ok' | 'degraded';
  checked_at: string;
  degraded: string[];
  components: {
    database: { status: string; latency_ms: number };
    redis: { status: string; latency_ms: number | null };
    queues: Record<string, { status: string; waiting: number | null; active: number | null; delayed: number | null; failed: number | null }>;
    workers: Record<string, { status: string; live: number; last_seen_at: string | null }>;
  };
};

/**
 * An app whose clock sits at a random instant far in the future, so heartbeats written in real
 * time by other suites are not live for it and only the ones a test inserts count.
 */
async function withFutureClock(body: (app: TestApp, clock: ReturnType<typeof testClock>, heartbeat: (pool: string) => Promise<void>) => Promise<void>) {
  const clock = testClock(new Date(Date.UTC(2040, 0, 1) + Math.floor(Math.random() * 500_000) * 60_000));
  const workerIds: string[] = [];
  const app = createTestApp({ now: clock.now });
  const heartbeat = async (pool: string) => {
    const workerId = `test-${pool}-${randomSuffix()}`;
    workerIds.push(workerId);
    await app.deps.sql`
      insert into worker_heartbeats (worker_id, pool, hostname, pid, started_at, last_seen_at)
      values (${workerId}, ${pool}, 'status-test', ${process.pid}, ${clock.now()}, ${clock.now()})`;
  };
  // Rates of the clock's day, so the fx source is fresh at that clock (removed afterwards, as the heartbeats).
  const fxDate = clock.now().toISOString().slice(0, 10);
  try {
    await eventually(async () => (app.deps.redis.status === 'ready' ? true : undefined));
    await saveRateDays(app.deps.sql, [{ date: fxDate, rates: new Map([['USD', '1.0834']]) }], clock.now());
    await body(app, clock, heartbeat);
  } finally {
    // Future-dated rows would look live (or newest) to everyone else: never leave them behind.
    await app.deps.sql`delete from fx_rate_days where as_of = ${fxDate}::date`;
    if (workerIds.length > 0) await app.deps.sql`delete from worker_heartbeats where worker_id in ${app.deps.sql(workerIds)}`;
    await app.close();
  }
}

describe('GET /v2/health and GET /v2/status', () => {
  test('GET /v2/health reports the process alive with its version and start time', async () => {
    const response = await t.request('/v2/health');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { status: string; version: string; started_at: string; uptime_seconds: number };
    expect(body.status).toBe('ok');
    expect(typeof body.version).toBe('string');
    expect(Number.isNaN(Date.parse(body.started_at))).toBe(false);
    expect(body.uptime_seconds).toBeGreaterThanOrEqual(0);
  });

  test('GET /v2/status reports database, Redis, every queue’s counts and names pools without workers as degraded', async () => {
    await withFutureClock(async (app, clock) => {
      const response = await app.request('/v2/status');
      expect(response.status).toBe(200);
      const body = (await response.json()) as StatusBody;
      expect(body.checked_at).toBe(clock.now().toISOString());
      expect(body.components.database.status).toBe('ok');
      expect(typeof body.components.database.latency_ms).toBe('number');
      expect(body.components.redis.status).toBe('ok');
      expect(typeof body.components.redis.latency_ms).toBe('number');

      expect(Object.keys(body.components.queues).sort()).toEqual([...POOLS].sort());
      for (const pool of POOLS) {
        const queue = body.components.queues[pool]!;
        expect(queue.status).toBe('ok');
        for (const count of [queue.waiting, queue.active, queue.delayed, queue.failed]) {
          expect(Number.isInteger(count)).toBe(true);
          expect(count).toBeGreaterThanOrEqual(0);
        }
      }

      expect(Object.keys(body.components.workers).sort()).toEqual([...POOLS].sort());
      for (const pool of POOLS) expect(body.components.workers[pool]).toEqual({ status: 'down', live: 0, last_seen_at: null });
      expect(body.status).toBe('degraded');
      expect([...body.degraded].sort()).toEqual(POOLS.map((pool) => `workers.${pool}`).sort());
    });
  });

  test('a live worker heartbeat makes its pool ok until the heartbeat is too old', async () => {
    await withFutureClock(async (app, clock, heartbeat) => {
      await heartbeat('render');
      await heartbeat('render');
      const seenAt = clock.now().toISOString();

      const live = (await (await app.request('/v2/status')).json()) as StatusBody;
      expect(live.components.workers.render).toEqual({ status: 'ok', live: 2, last_seen_at: seenAt });
      expect(live.degraded).not.toContain('workers.render');
      expect(live.degraded).toContain('workers.ingest');

      clock.advance(31_000); // past the 30 s liveness window
      const gone = (await (await app.request('/v2/status')).json()) as StatusBody;
      expect(gone.components.workers.render).toEqual({ status: 'down', live: 0, last_seen_at: null });
      expect(gone.degraded).toContain('workers.render');
    });
  });

  test('with every dependency up and a worker in every pool the status is ok with nothing degraded', async () => {
    await withFutureClock(async (app, _clock, heartbeat) => {
      for (const pool of POOLS) await heartbeat(pool);
      const response = await app.request('/v2/status');
      expect(response.status).toBe(200);
      const body = (await response.json()) as StatusBody;
      expect(body.degraded).toEqual([]);
      expect(body.status).toBe('ok');
      for (const pool of POOLS) expect(body.components.workers[pool]!.status).toBe('ok');
      expect((body.components as unknown as { fx: { status: string } }).fx.status).toBe('fresh');
    });
  });

  test('GET /v2/status shows every enabled source as on /health and names stale ones as degraded', async () => {
    const fresh = uniqueSource();
    const stale = uniqueSource();
    await withApp({ config: { SOURCES: `${fresh},${stale}` } }, async (app) => {
      try {
        await app.deps.sql`
          insert into price_sources (name, last_success_at, stale_after_seconds)
          values (${fresh}, now(), 600), (${stale}, now() - interval '1 hour', 600)`;
        await eventually(async () => (app.deps.redis.status === 'ready' ? true : undefined));
        const response = await app.request('/v2/status');
        expect(response.status).toBe(200);
        const body = (await response.json()) as { degraded: string[]; components: { sources: Record<string, { status: string }> } };
        expect(body.components.sources[fresh]!.status).toBe('fresh');
        expect(body.components.sources[stale]!.status).toBe('stale');
        expect(body.degraded).toContain(`sources.${stale}`);
        expect(body.degraded).not.toContain(`sources.${fresh}`);
      } finally {
        await app.deps.sql`delete from price_sources where name in (${fresh}, ${stale})`;
      }
    });
  });

  test('GET /v2/status reports the Steam upstreams and game-platform automation as unavailable (offers are never sent)', async () => {
    await withApp({ config: { STEAM_WEB_API_KEY: '' } }, async (app) => {
      const body = (await (await app.request('/v2/status')).json()) as {
        components: { gameplatform: Record<string, { status: string; last_success_at?: string | null; reason?: string }> };
        degraded: string[];
      };
      expect(body.components.gameplatform.steam_web_api!.status).toBe('unavailable');
      expect(body.components.gameplatform.automation).toEqual({ status: 'unavailable', reason: expect.stringContaining('not sent to Steam') });
      // A deployment without a Steam key is not degraded: it simply does not offer profiles.
      expect(body.degraded.some((component) => component.startsWith('gameplatform'))).toBe(false);
    });
    await withApp({ config: { STEAM_WEB_API_KEY: 'status-test-key' } }, async (app) => {
      const fetchedAt = new Date('2026-01-02T03:04:05.000Z');
      const steamId = '76561198000000042';
      await app.deps.sql`insert into steam_profiles (steam_id, profile, fetched_at) values (${steamId}, ${app.deps.sql.json({})}, ${fetchedAt})
                         on conflict (steam_id) do update set fetched_at = excluded.fetched_at`;
      try {
        const body = (await (await app.request('/v2/status')).json()) as {
          components: { gameplatform: Record<string, { status: string; last_success_at?: string | null }> };
        };
        expect(body.components.gameplatform.steam_web_api!.status).toBe('ok');
        expect(Date.parse(body.components.gameplatform.steam_web_api!.last_success_at!)).toBeGreaterThanOrEqual(fetchedAt.getTime());
        expect(body.components.gameplatform.steam_community!.status).toBe('ok');
      } finally {
        await app.deps.sql`delete from steam_profiles where steam_id = ${steamId}`;
      }
    });
  });

  test('GET /v2/status reports item files with counts and Chromium as media components, outside the degraded list', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'status-item-files-'));
    try {
      const missingChromium = join(dir, 'no-chromium');
      await withApp({ config: { ITEM_FILES_DIR: dir, CHROMIUM_PATH: missingChromium } }, async (app) => {
        const body = (await (await app.request('/v2/status')).json()) as MediaStatusBody;
        expect(body.components.media).toEqual({
          item_files: { status: 'unavailable', models: 0, paints: 0, stickers: 0, charms: 0 },
          chromium: { status: 'unavailable', path: missingChromium },
          renders: { mode: 'card', real_models: 0, stand_in_models: 0 },
        });
        expect(body.degraded.some((component) => component.startsWith('media'))).toBe(false);
      });
      await generateItemFiles(dir, { ids: { model: [7, 9], paint: [44], sticker: [1], charm: [] } });
      await withApp({ config: { ITEM_FILES_DIR: dir, CHROMIUM_PATH: process.execPath } }, async (app) => {
        const body = (await (await app.request('/v2/status')).json()) as MediaStatusBody;
        expect(body.components.media).toEqual({
          item_files: { status: 'ok', models: 2, paints: 1, stickers: 1, charms: 0 },
          chromium: { status: 'ok', path: process.execPath },
          // docs/design.md §18: generated stand-ins are not real models, so items are drawn as cards.
          renders: { mode: 'card', real_models: 0, stand_in_models: 2 },
        });
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('GET /v2/status answers 503 status_unavailable promptly when the database is unreachable', async () => {
    await withApp({ config: { DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nope' } }, async (app) => {
      const started = performance.now();
      const response = await app.request('/v2/status');
      expect(performance.now() - started).toBeLessThan(5_000);
      expect(response.status).toBe(503);
      const error = await errorOf(response);
      expect(error.code).toBe('status_unavailable');
      expect(error.request_id).toBe(response.headers.get('x-request-id')!);
      // Liveness does not depend on the database.
      expect((await app.request('/v2/health')).status).toBe(200);
    });
  });
});

describe('GET /v2/meta/*', () => {
  test('GET /v2/meta/scopes lists every scope in the stable order of docs/design.md §5, and the defaults', async () => {
    const response = await t.request('/v2/meta/scopes');
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      scopes: [
        'catalog:read',
        'prices:read',
        'market:read',
        'inventory:read',
        'profiles:read',
        'accounts:read',
        'inspect:read',
        'media:read',
        'media:write',
        'trade:write',
        'webhooks:read',
        'webhooks:write',
        'audit:read',
        'audit:export',
        'usage:read',
        'accounts:write',
        'trade:read',
      ],
      default_scopes: ['catalog:read', 'prices:read', 'market:read', 'inventory:read', 'profiles:read', 'inspect:read', 'media:read', 'usage:read'],
    });
  });

  type CapabilitiesBody = {
    spec_version: string;
    capabilities: {
      operation: string;
      method: string;
      path: string;
      status: string;
      auth: string;
      scopes: string[];
      units: number;
      unavailable_because?: string[];
    }[];
  };

  test('GET /v2/meta/capabilities lists every operation as production or planned with its scopes', async () => {
    const response = await t.request('/v2/meta/capabilities');
    expect(response.status).toBe(200);
    const body = (await response.json()) as CapabilitiesBody;
    expect(body.spec_version).toBe('1.0.0');
    expect(body.capabilities.map((capability) => capability.operation)).toEqual(OPERATIONS.map((operation) => operation.id));
    for (const operation of OPERATIONS) {
      const capability = body.capabilities.find((entry) => entry.operation === operation.id)!;
      expect(capability).toEqual({
        operation: operation.id,
        method: operation.method,
        path: operation.path,
        status: operation.built,
        auth: operation.auth,
        scopes: [...operation.scopes],
        units: operation.units,
      });
    }
    const statuses = new Set(body.capabilities.map((capability) => capability.status));
    // Every status is the operation's own (planned while any is unbuilt; none are since renders).
    expect(statuses).toEqual(new Set(OPERATIONS.map((operation) => operation.built)));
    expect(body.capabilities.find((capability) => capability.operation === 'audit_events.list')!.scopes).toEqual(['audit:read']);
  });

  test('a built operation whose dependency is missing is listed as unavailable, naming the dependency', async () => {
    const closedPort = await freePort(); // nothing listens there: Redis never becomes ready
    await withApp({ config: { REDIS_URL: `redis://127.0.0.1:${closedPort}`, WEBHOOK_SECRET_KEY, STEAM_WEB_API_KEY: 'status-test-key' } }, async (app) => {
      expect(app.deps.redis.status).not.toBe('ready');
      const response = await app.request('/v2/meta/capabilities');
      expect(response.status).toBe(200);
      const body = (await response.json()) as CapabilitiesBody;
      for (const operation of OPERATIONS) {
        const capability = body.capabilities.find((entry) => entry.operation === operation.id)!;
        if (operation.built === 'planned') {
          expect(capability.status).toBe('planned');
        } else if ((operation.dependsOn as readonly string[]).includes('redis')) {
          expect(capability.status).toBe('unavailable');
          expect(capability.unavailable_because).toEqual(['redis']);
        } else {
          expect(capability.status).toBe('production');
          expect(capability.unavailable_because).toBeUndefined();
        }
      }
      expect(
        body.capabilities
          .filter((capability) => capability.status === 'unavailable')
          .map((capability) => capability.operation)
          .sort(),
      ).toEqual([
        'audit_events.list',
        'audit_exports.create',
        'audit_exports.get',
        'audit_exports.list',
        'catalog.items.list',
        'gameplatform_accounts.connect',
        'gameplatform_accounts.delete',
        'gameplatform_accounts.list',
        'gameplatform_accounts.steam_token.delete',
        'gameplatform_accounts.steam_token.set',
        'gameplatform_accounts.trades.list',
        'gameplatform_counterparties.get',
        'inspect.decode',
        'inventories.get',
        'market.summary',
        'market_index.constituents',
        'market_index.get',
        'market_index.history',
        'me.get',
        'prices.get',
        'prices.history',
        'prices.public.stream',
        'prices.stream',
        'profiles.get',
        'renders.create',
        'renders.get',
        'scenes.create',
        'scenes.get',
        'scenes.list',
        'scenes.revision',
        'scenes.update',
        'trade_intents.cancel',
        'trade_intents.create',
        'trade_intents.get',
        'trade_intents.list',
        'usage.get',
        'viewer_sessions.create',
        'webhooks.create',
        'webhooks.delete',
        'webhooks.deliveries.list',
        'webhooks.deliveries.retry',
        'webhooks.get',
        'webhooks.list',
        'webhooks.rotate_secret',
        'webhooks.test',
        'webhooks.update',
      ]);
    });
  });
});

describe('OpenAPI and docs', () => {
  test('GET /openapi.json is an OpenAPI 3.1 document covering the platform and identity paths', async () => {
    const response = await t.request('/openapi.json');
    expect(response.status).toBe(200);
    const body = (await response.json()) as { openapi: string; info: { title: string }; paths: Record<string, Record<string, unknown>> };
    expect(body.openapi).toMatch(/^3\.1\.\d+$/);
    expect(body.info.title.length).toBeGreaterThan(0);
    for (const path of ['/v2/me', '/v2/audit/events', '/v1/me/keys', '/v1/accounts', '/health', '/v2/usage']) {
      expect(Object.keys(body.paths)).toContain(path);
    }
    expect(body.paths['/v2/me']!.get).toBeDefined();
    expect(body.paths['/v2/audit/events']!.get).toBeDefined();
    expect(body.paths['/v1/me/keys']!.get).toBeDefined();
    expect(body.paths['/v1/me/keys']!.post).toBeDefined();
    expect(body.paths['/v1/accounts']!.post).toBeDefined();
  });

  test('GET /docs returns an HTML page', async () => {
    const response = await t.request('/docs');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toContain('text/html');
    expect((await response.text()).toLowerCase()).toContain('<html');
  });
});

describe('X-Request-Id', () => {
  test('every response carries an X-Request-Id, each one different', async () => {
    const ws = await workspaceWithKey(t);
    const responses = await Promise.all([
      t.request('/health'),
      t.request('/v2/health'),
      t.request('/v2/status'),
      t.request('/v2/meta/scopes'),
      t.request('/v2/meta/capabilities'),
      t.request('/openapi.json'),
      t.request('/docs'),
      t.request('/v2/me', { headers: ws.keyHeaders }),
      t.request('/v2/me'),
      t.request('/no/such/route'),
      t.request('/v1/accounts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{not json' }),
    ]);
    const ids = responses.map((response) => response.headers.get('x-request-id'));
    for (const id of ids) {
      expect(id).toBeTruthy();
      expect(id!.length).toBeGreaterThan(0);
    }
    expect(new Set(ids).size).toBe(ids.length);
  });

  test('a valid incoming X-Request-Id is echoed in the header and in error bodies', async () => {
    const requestId = `client-${randomSuffix()}:abc.1`;
    const ok = await t.request('/v2/health', { headers: { 'x-request-id': requestId } });
    expect(ok.headers.get('x-request-id')).toBe(requestId);

    const denied = await t.request('/v2/me', { headers: { 'x-request-id': requestId } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('x-request-id')).toBe(requestId);
    expect((await errorOf(denied)).request_id).toBe(requestId);
  });

  test('an invalid incoming X-Request-Id is replaced by a generated one', async () => {
    for (const invalid of ['has spaces in it', 'x'.repeat(129), 'semi;colon']) {
      const response = await t.request('/v2/health', { headers: { 'x-request-id': invalid } });
      const id = response.headers.get('x-request-id');
      expect(id).toBeTruthy();
      expect(id).not.toBe(invalid);
    }
  });
});
