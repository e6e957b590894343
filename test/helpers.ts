import { join } from 'node:path';
import { Writable } from 'node:stream';
import type { AnyElysia } from 'elysia';
import pino from 'pino';
import postgres from 'postgres';
import { createApp } from '../api/app.ts';
import { type AppDeps, createDeps } from '../api/deps.ts';
import { recordFxSuccess, saveRateDays } from '../shared/fx/repository.ts';
import { fxFreshness } from '../shared/health/fx.ts';
import type { Scope } from '../shared/http/scopes.ts';
import { adminCreateKey, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import type { Tier } from '../shared/identity/workspaces.ts';
import { type Config, parseConfig } from '../shared/platform/config.ts';
import type { Sql } from '../shared/platform/db.ts';
import { createLogger } from '../shared/platform/logger.ts';
import { migrate } from '../shared/platform/migrate.ts';
import type { FetchContext } from '../shared/sources/types.ts';
import { type ImageFake, startImageFake } from './fakes/images/server.ts';

/**
 * Test harness: a real app over the real Postgres and Redis that `npm test` prepared
 * (DATABASE_URL/REDIS_URL), driven through `app.handle(new Request(…))`. Each test makes its own
 * workspace, so suites never depend on each other or on order.
 */
export type TestClock = { now: () => Date; set: (at: Date | string) => void; advance: (ms: number) => void };

export function testClock(start: Date | string = new Date()): TestClock {
  let current = new Date(start);
  return {
    now: () => new Date(current),
    set: (at) => {
      current = new Date(at);
    },
    advance: (ms) => {
      current = new Date(current.getTime() + ms);
    },
  };
}

let imageFake: ImageFake | undefined;

/**
 * docs/design.md §18: the image fake every test app's STEAM_IMAGE_URL and ITEM_ASSETS_URL point at, started on
 * first use, one per test process (whatever the environment says, so tests are deterministic; a test
 * passes its own URLs in `config` to use another). Read it, do not set faults on it: a test that needs
 * faults starts its own fake (startImageFake) so nothing leaks into other tests.
 */
export function sharedImageFake(): ImageFake {
  imageFake ??= startImageFake({ unref: true });
  return imageFake;
}

/**
 * The Redis key prefix of each scratch database (scratchTestApp): Redis holds what belongs with the
 * database (queues, snapshot documents keyed by snapshot id, rate counters), so a scratch database
 * that shared the process's prefix would meet another database's keys under the same ids.
 */
const scratchPrefixes = new Map<string, string>();

export function testConfig(overrides: Record<string, string> = {}): Config {
  const images = sharedImageFake().url;
  // An app on a scratch database uses that database's prefix unless it names its own.
  const scratchPrefix = overrides.DATABASE_URL === undefined ? undefined : scratchPrefixes.get(overrides.DATABASE_URL);
  // Suites write prices straight into Postgres, so the per-process item price cache is off unless asked for.
  return parseConfig({
    ...process.env,
    NODE_ENV: 'test',
    LOG_LEVEL: 'silent',
    TRUST_PROXY: 'true',
    PRICE_CACHE_MS: '0',
    STEAM_IMAGE_URL: images,
    ITEM_ASSETS_URL: images,
    ...(scratchPrefix ? { QUEUE_PREFIX: scratchPrefix } : {}),
    ...overrides,
  });
}

export type TestApp = {
  app: AnyElysia;
  deps: AppDeps;
  request: (path: string, init?: RequestInit & { json?: unknown }) => Promise<Response>;
  close: () => Promise<void>;
};

export function createTestApp(
  options: {
    config?: Record<string, string>;
    now?: () => Date;
    /** Mounts test-only routes after the shared plugins; receives the app's deps for plugins that need them. */
    extend?: (app: AnyElysia, deps: AppDeps) => AnyElysia;
    /** The app's logger (default silent): a capturing one lets a suite check what is logged. */
    log?: AppDeps['log'];
  } = {},
): TestApp {
  const config = testConfig(options.config);
  const deps = createDeps(config, { now: options.now, log: options.log ?? createLogger({ level: 'silent', name: 'test' }) });
  const extend = options.extend;
  const app = createApp(deps, extend ? (base) => extend(base, deps) : undefined);
  return {
    app,
    deps,
    request: (path, init = {}) => {
      const { json, ...rest } = init;
      const headers = new Headers(rest.headers);
      if (json !== undefined && !headers.has('content-type')) headers.set('content-type', 'application/json');
      return app.handle(new Request(`http://localhost${path}`, { ...rest, headers, body: json !== undefined ? JSON.stringify(json) : rest.body }));
    },
    close: () => deps.close(),
  };
}

let counter = 0;
export function uniqueEmail(tag = 'user'): string {
  counter += 1;
  return `${tag}-${Date.now().toString(36)}-${counter}-${Math.random().toString(36).slice(2, 8)}@example.test`;
}

export const TEST_PASSWORD = 'correct horse battery staple';

/** Signs up through the API: a new account, workspace and session. */
export async function signUp(t: TestApp, options: { email?: string; workspaceName?: string } = {}) {
  const email = options.email ?? uniqueEmail();
  const response = await t.request('/v1/accounts', {
    method: 'POST',
    json: { email, password: TEST_PASSWORD, ...(options.workspaceName ? { workspace_name: options.workspaceName } : {}) },
  });
  if (response.status !== 201) throw new Error(`sign-up failed: ${response.status} ${await response.text()}`);
  const body = (await response.json()) as {
    account: { id: string; email: string };
    workspace: { id: string; name: string; tier: Tier };
    session: { token: string; expires_at: string };
  };
  return { ...body, email, token: body.session.token, auth: { authorization: `Bearer ${body.session.token}` } };
}

/** Creates an API key through the API (POST /v1/me/keys) and returns the raw key. */
export async function createKey(t: TestApp, sessionToken: string, body: { label?: string; scopes?: Scope[] } = {}) {
  const response = await t.request('/v1/me/keys', { method: 'POST', headers: { authorization: `Bearer ${sessionToken}` }, json: body });
  if (response.status !== 201) throw new Error(`key creation failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as { id: string; key: string; label: string; prefix: string; scopes: Scope[]; created_at: string };
}

/** A workspace with one API key holding `scopes` (default: every scope). */
export async function workspaceWithKey(t: TestApp, options: { scopes?: Scope[]; tier?: Tier; budgets?: { minute: number | null; day: number | null } } = {}) {
  await t.deps.ready();
  const user = await signUp(t);
  if (options.tier) await adminUpdateWorkspace(t.deps.sql, user.workspace.id, { tier: options.tier });
  if (options.budgets) await adminUpdateWorkspace(t.deps.sql, user.workspace.id, { budgets: options.budgets });
  const key = await adminCreateKey(t.deps.sql, {
    workspaceId: user.workspace.id,
    label: 'test',
    scopes: options.scopes ?? [...(await import('../shared/http/scopes.ts')).SCOPES],
  });
  return { ...user, key: key.key, keyId: key.id, keyHeaders: { 'x-api-key': key.key } };
}

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 10_000, intervalMs = 25): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await Bun.sleep(intervalMs);
  }
}

export async function errorOf(
  response: Response,
): Promise<{ code: string; message: string; request_id: string; details?: { field: string; message: string; code?: string }[] }> {
  const body = (await response.json()) as { error: { code: string; message: string; request_id: string } };
  return body.error;
}

/**
 * A TestApp over its own freshly migrated database (dropped by `close`), for suites that need the
 * whole of a table to themselves (an empty catalog, every latest price of a marketplace).
 */
export async function scratchTestApp(options: Parameters<typeof createTestApp>[0] & { tag: string }): Promise<TestApp> {
  const base = new URL(process.env.DATABASE_URL!);
  const name = `${options.tag}_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  const serverUrl = (database: string) => {
    const url = new URL(base);
    url.pathname = `/${database}`;
    return url.toString();
  };
  const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => undefined });
  await admin.unsafe(`create database "${name}"`);
  // Its own Redis prefix too (unless the suite names one), shared by every app made on it later.
  const databaseUrl = serverUrl(name);
  const prefix = options.config?.QUEUE_PREFIX ?? `scratch-${crypto.randomUUID().slice(0, 13)}`;
  scratchPrefixes.set(databaseUrl, prefix);
  const scratch = createTestApp({ ...options, config: { ...options.config, DATABASE_URL: databaseUrl } });
  await migrate(scratch.deps.sql, join(import.meta.dir, '..', 'sql'));
  return {
    ...scratch,
    close: async () => {
      if (options.config?.QUEUE_PREFIX === undefined) {
        // The keys under its own prefix go with the database.
        const keys = await scratch.deps.redis.keys(`${prefix}:*`).catch(() => []);
        for (let from = 0; from < keys.length; from += 500) await scratch.deps.redis.unlink(...keys.slice(from, from + 500)).catch(() => 0);
      }
      await scratch.close();
      scratchPrefixes.delete(databaseUrl);
      await admin.unsafe(`drop database if exists "${name}" with (force)`);
      await admin.end({ timeout: 5 });
    },
  };
}

/**
 * Stores an ECB rate set dated `at`'s UTC day and a successful fetch, so the always-on fx source
 * is fresh in GET /health (docs/design.md §14) for suites that expect a healthy service without running it.
 * Fresh rates already stored (another suite's) are left as they are.
 */
export async function seedFreshFxRates(sql: Sql, at: Date = new Date()): Promise<void> {
  if ((await fxFreshness(sql, at)).status === 'fresh') return;
  await saveRateDays(
    sql,
    [
      {
        date: at.toISOString().slice(0, 10),
        rates: new Map([
          ['USD', '1.0834'],
          ['GBP', '0.84290'],
          ['JPY', '162.41'],
        ]),
      },
    ],
    at,
  );
  await recordFxSuccess(sql, at, 0);
}

/** The error `promise` rejects with; fails the test when it resolves. */
export async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a failure');
}

/** A pino logger at trace level whose lines land in `lines` (what a source adapter logged, secrets included or not). */
export function capturingLog(): { log: FetchContext['log']; lines: string[] } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: pino({ level: 'trace' }, sink), lines };
}
