import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { scratchTestApp, seedFreshFxRates, type TestApp, workspaceWithKey } from '../helpers.ts';

/**
 * The guard of issue 10: every operation the OpenAPI document lists, with hostile values in every
 * path parameter, query parameter and body field, and malformed credentials. Nothing a client sends
 * may end in a 5xx, and every 4xx carries the shared error body. Operations added later are walked
 * with no change here, because the walk starts from /openapi.json.
 */

type JsonSchema = {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  format?: string;
  minimum?: number;
  minLength?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  default?: unknown;
};
type Parameter = { name: string; in: 'path' | 'query' | 'header' | 'cookie'; required?: boolean; schema: JsonSchema };
type Operation = { parameters?: Parameter[]; requestBody?: { content: Record<string, { schema: JsonSchema }> } };
type Walk = { method: string; path: string; operation: Operation };

const SEED = 20261123;
const MEGABYTE = 'a'.repeat(1024 * 1024);
const nested = (depth: number): unknown => (depth === 0 ? 'x' : { a: nested(depth - 1) });

// Values no field should turn into a 5xx: NUL, lone surrogates, huge and out-of-range values,
// date-times Postgres cannot hold, traversal, and every JSON type where another is expected.
const HOSTILE_TEXT = [
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfffy',
  MEGABYTE,
  '',
  ' ',
  '../../etc/passwd',
  '..%2f..%2f',
  '%00',
  '0000-01-01T00:00:00Z',
  '0001-01-01T00:00:00+14:00',
  '9999-12-31T23:59:59-14:00',
  '10000-01-01T00:00:00Z',
  '2026-02-30T00:00:00Z',
  '2026-01-01',
  '2026-01-01T25:00:00Z',
  'not.a.cursor',
  'eyJsIjoieCJ9.c2lnbmF0dXJl',
  '-1',
  '1e400',
  '99999999999999999999999',
  'NaN',
  'null',
  '<script>alert(1)</script>',
  "' or 1=1 --",
];
const HOSTILE_JSON: unknown[] = [...HOSTILE_TEXT, -1, 0, 1e308, -1e308, 2 ** 63, 1.5, true, false, null, [], {}, ['\u0000'], { '\u0000': 1 }, nested(64)];

/** A few more strings per field from fast-check, over all of Unicode including lone surrogates. */
const randomText = (field: string) =>
  fc.sample(fc.string({ unit: 'binary', maxLength: 40 }), { seed: SEED + [...field].reduce((sum, c) => sum + c.charCodeAt(0), 0), numRuns: 6 });

/** A plausible value for a schema, so that one field at a time can be made hostile. */
function plausible(schema: JsonSchema | undefined, name = ''): unknown {
  if (!schema) return 'x';
  if (schema.default !== undefined) return schema.default;
  if (schema.const !== undefined) return schema.const;
  if (schema.enum?.length) return schema.enum[0];
  const variant = schema.anyOf?.[0] ?? schema.oneOf?.[0];
  if (variant) return plausible(variant, name);
  const type = Array.isArray(schema.type) ? schema.type.find((t) => t !== 'null') : schema.type;
  if (schema.format === 'date-time') return new Date(Date.now() - 3_600_000).toISOString();
  if (schema.format === 'uuid') return '0190b6a4-7c3e-7000-8000-000000000000';
  if (schema.format === 'email') return `walker-${Math.random().toString(36).slice(2)}@example.test`;
  switch (type) {
    case 'integer':
    case 'number':
      return schema.minimum ?? 1;
    case 'boolean':
      return true;
    case 'array':
      return [plausible(schema.items, name)];
    case 'object':
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, value]) => [key, plausible(value, key)]));
    default:
      if (name === 'url') return 'https://127.0.0.1/hook';
      if (name === 'password') return 'correct horse battery staple';
      return 'x'.repeat(Math.max(1, schema.minLength ?? 1));
  }
}

function queryString(values: Record<string, unknown>, raw = ''): string {
  const search = new URLSearchParams();
  for (const [key, value] of Object.entries(values)) if (value !== undefined) search.set(key, typeof value === 'string' ? value : JSON.stringify(value));
  const text = search.toString();
  return [text, raw].filter(Boolean).join('&');
}

describe('hostile input on every documented operation', () => {
  let t: TestApp;
  let walks: Walk[];
  let headers: Record<string, string>;
  let seen = 0;
  const failures: string[] = [];

  beforeAll(async () => {
    t = await scratchTestApp({
      tag: 'hostile',
      config: {
        WEBHOOK_SECRET_KEY: Buffer.alloc(32, 9).toString('base64'),
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
        PUBLIC_PRICES_RATE_LIMIT: '1000000',
      },
    });
    // A small catalog and a price snapshot, so catalog and keyless endpoints answer rather than 503.
    await syncCatalog(t.deps.sql, generateCatalog().slice(0, 200));
    await buildPriceSnapshot(t.deps.sql, new Date());
    // Exchange rates, so /health is up and `?currency=` reaches its conversion rather than 503.
    await seedFreshFxRates(t.deps.sql);
    const ws = await workspaceWithKey(t, { tier: 'enterprise', budgets: { minute: null, day: null } });
    headers = { ...ws.keyHeaders, authorization: `Bearer ${ws.token}` };
    const document = (await (await t.request('/openapi.json')).json()) as { paths: Record<string, Record<string, Operation>> };
    walks = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations).map(([method, operation]) => ({ method: method.toUpperCase(), path, operation })),
    );
  }, 60_000);

  afterAll(async () => {
    await t?.close();
  });

  // Each test reports only its own failures.
  beforeEach(() => {
    failures.length = 0;
  });

  /** Sends one request; records a failure when the answer is a 5xx or a 4xx without the error body. */
  async function send(label: string, method: string, url: string, init: { body?: string; headers?: Record<string, string> } = {}) {
    seen += 1;
    const requestHeaders: Record<string, string> = { ...headers, 'idempotency-key': `walk-${seen}`, ...init.headers };
    if (init.body !== undefined) requestHeaders['content-type'] = 'application/json';
    let response: Response;
    try {
      response = await t.app.handle(new Request(`http://localhost${url}`, { method, headers: requestHeaders, body: init.body }));
    } catch (error) {
      failures.push(`${label}: threw ${(error as Error).message}`);
      return;
    }
    // A stream that opened (the keyless price stream ignores credentials) never ends: not read.
    if (response.status < 400 && response.headers.get('content-type')?.startsWith('text/event-stream')) {
      await response.body?.cancel();
      return;
    }
    const text = await response.text();
    if (response.status >= 500) {
      failures.push(`${label}: ${response.status} ${text.slice(0, 200)}`);
      return;
    }
    if (response.status >= 400) {
      let body: { error?: { code?: unknown; message?: unknown; request_id?: unknown } } | null = null;
      try {
        body = JSON.parse(text);
      } catch {
        body = null;
      }
      const error = body?.error;
      if (typeof error?.code !== 'string' || typeof error.message !== 'string' || typeof error.request_id !== 'string') {
        failures.push(`${label}: ${response.status} without the shared error body: ${text.slice(0, 200)}`);
      }
    }
  }

  function pathWith(walk: Walk, overrides: Record<string, string> = {}): string {
    return walk.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
      if (name in overrides) return overrides[name]!;
      const parameter = walk.operation.parameters?.find((p) => p.in === 'path' && p.name === name);
      return encodeURIComponent(String(plausible(parameter?.schema, name)));
    });
  }

  function baseQuery(walk: Walk): Record<string, unknown> {
    return Object.fromEntries(
      (walk.operation.parameters ?? []).filter((p) => p.in === 'query' && p.required).map((p) => [p.name, plausible(p.schema, p.name)]),
    );
  }

  function bodySchema(walk: Walk): JsonSchema | undefined {
    return walk.operation.requestBody?.content['application/json']?.schema;
  }

  test('walks a document that lists every route', () => {
    expect(walks.length).toBeGreaterThanOrEqual(30);
  });

  test('path parameters: no 5xx, every 4xx with the shared error body', async () => {
    for (const walk of walks) {
      for (const parameter of (walk.operation.parameters ?? []).filter((p) => p.in === 'path')) {
        // A lone surrogate cannot be percent-encoded; its UTF-8 spelling is among the raw values below.
        const values = [...HOSTILE_TEXT, ...randomText(parameter.name)].filter((value) => value.isWellFormed()).map((value) => encodeURIComponent(value));
        // Raw spellings too: traversal, a percent-encoded NUL, and invalid percent-encodings.
        values.push('..', '..%2F..', '%00', '%ED%A0%80', '%FF', '%', '%zz');
        for (const value of values) {
          await send(
            `${walk.method} ${walk.path} path ${parameter.name}=${value.slice(0, 40)}`,
            walk.method,
            queryPath(pathWith(walk, { [parameter.name]: value }), baseQuery(walk)),
            bodyInit(walk),
          );
        }
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);

  test('query parameters: no 5xx, every 4xx with the shared error body', async () => {
    for (const walk of walks) {
      for (const parameter of (walk.operation.parameters ?? []).filter((p) => p.in === 'query')) {
        for (const value of [...HOSTILE_TEXT, ...randomText(parameter.name)]) {
          await send(
            `${walk.method} ${walk.path} query ${parameter.name}=${JSON.stringify(value.slice(0, 40))}`,
            walk.method,
            `${pathWith(walk)}?${queryString({ ...baseQuery(walk), [parameter.name]: value })}`,
            bodyInit(walk),
          );
        }
        for (const raw of ['%00', '%ED%A0%80', '%FF', '%', '%zz']) {
          await send(
            `${walk.method} ${walk.path} raw query ${parameter.name}=${raw}`,
            walk.method,
            `${pathWith(walk)}?${queryString(baseQuery(walk), `${parameter.name}=${raw}`)}`,
            bodyInit(walk),
          );
        }
      }
      // An unknown parameter, and a repeated one.
      await send(
        `${walk.method} ${walk.path} unknown query`,
        walk.method,
        `${pathWith(walk)}?${queryString(baseQuery(walk), 'zz%00=1&limit=1&limit=2')}`,
        bodyInit(walk),
      );
    }
    expect(failures).toEqual([]);
  }, 180_000);

  test('body fields and whole bodies: no 5xx, every 4xx with the shared error body', async () => {
    for (const walk of walks) {
      const schema = bodySchema(walk);
      if (!schema) continue;
      const base = plausible(schema) as Record<string, unknown>;
      const url = queryPath(pathWith(walk), baseQuery(walk));
      for (const field of Object.keys(schema.properties ?? {})) {
        for (const value of [...HOSTILE_JSON, ...randomText(field)]) {
          await send(`${walk.method} ${walk.path} body ${field}=${JSON.stringify(value)?.slice(0, 40)}`, walk.method, url, {
            body: JSON.stringify({ ...base, [field]: value }),
          });
        }
        // The field's own hostile members, for arrays of strings (event_types, scopes, …).
        await send(`${walk.method} ${walk.path} body ${field}=[lone surrogate]`, walk.method, url, { body: JSON.stringify({ ...base, [field]: ['\ud800'] }) });
      }
      for (const whole of ['', 'null', '[]', '"text"', '1', '{', '{"a":', JSON.stringify(nested(5_000)), JSON.stringify({ ...base, extra: '\u0000' })]) {
        await send(`${walk.method} ${walk.path} whole body ${whole.slice(0, 20)}`, walk.method, url, { body: whole });
      }
      await send(`${walk.method} ${walk.path} body over 1 MiB`, walk.method, url, { body: JSON.stringify({ ...base, pad: 'x'.repeat(1_100_000) }) });
      await send(`${walk.method} ${walk.path} body as text/plain`, walk.method, url, { body: JSON.stringify(base), headers: { 'content-type': 'text/plain' } });
    }
    expect(failures).toEqual([]);
  }, 180_000);

  test('credentials: malformed keys, bearer tokens and cookies are 401, never 5xx', async () => {
    const malformed = ['', ' ', 'x'.repeat(5_000), 'é', 'key with spaces', '%', '%00', 'ck_\u00ff'];
    const cookies = ['session=%', 'session=%E0%A4%A', 'session=%00', 'session', '=', 'session=;session=%ff', `session=${'x'.repeat(5_000)}`, ';;;'];
    for (const walk of walks) {
      const url = queryPath(pathWith(walk), baseQuery(walk));
      for (const key of malformed) {
        await send(`${walk.method} ${walk.path} x-api-key ${key.slice(0, 20)}`, walk.method, url, {
          ...bodyInit(walk),
          headers: { 'x-api-key': key, authorization: '' },
        });
        await send(`${walk.method} ${walk.path} bearer ${key.slice(0, 20)}`, walk.method, url, {
          ...bodyInit(walk),
          headers: { 'x-api-key': '', authorization: `Bearer ${key}` },
        });
      }
      for (const cookie of cookies) {
        await send(`${walk.method} ${walk.path} cookie ${cookie.slice(0, 20)}`, walk.method, url, {
          ...bodyInit(walk),
          headers: { 'x-api-key': '', authorization: '', cookie },
        });
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);

  function bodyInit(walk: Walk): { body?: string } {
    const schema = bodySchema(walk);
    return schema ? { body: JSON.stringify(plausible(schema)) } : {};
  }

  function queryPath(path: string, query: Record<string, unknown>): string {
    const text = queryString(query);
    return text ? `${path}?${text}` : path;
  }
});
