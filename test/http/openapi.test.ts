import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync } from 'node:zlib';
import { compileErrors, validate } from '@readme/openapi-parser';
import Ajv2020 from 'ajv/dist/2020';
import type { z } from 'zod';
import { openApiPath, requestJsonSchema } from '../../api/openapi.ts';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { syncCatalog } from '../../shared/catalog/repository.ts';
import { storeInventorySnapshot } from '../../shared/gameplatform/inventory/snapshots.ts';
import { encodeCertificate } from '../../shared/inspect/index.ts';
import { enqueue, type JobName } from '../../shared/jobs/queues.ts';
import { calculateMarketIndex } from '../../shared/market-index/calculate.ts';
import { createScene } from '../../shared/media/scenes.ts';
import { parseSceneBody } from '../../shared/media/scenes-model.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { claimIngestRun, writeIngestRun } from '../../shared/prices/ingest.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { exportsPool } from '../../workers/exports/index.ts';
import type { PoolContext } from '../../workers/pool.ts';
import { createTestApp, scratchTestApp, seedFreshFxRates, TEST_PASSWORD, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';
import { WEBHOOK_KEY_A } from '../webhooks/webhooks-fixtures.ts';

/**
 * Issue 10, item 6: /openapi.json is a valid OpenAPI 3.1 document (checked by an independent
 * validator) and tells the truth about every route: its real parameters (a parameter with a
 * default is optional and shows the default), its JSON body, and its error answers.
 */

type Parameter = { name: string; in: string; required?: boolean; schema: { default?: unknown } };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
};
type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
type Route = { method: string; path: string; hooks: { body?: unknown; query?: unknown; params?: unknown; detail?: { hide?: boolean } } };

const isZod = (schema: unknown): schema is z.ZodObject => typeof schema === 'object' && schema !== null && '_zod' in schema;
const keysOf = (schema: unknown) => (isZod(schema) && 'shape' in schema ? Object.keys(schema.shape).sort() : []);

describe('GET /openapi.json', () => {
  let t: TestApp;
  let document: Document;
  let routes: Route[];

  beforeAll(async () => {
    t = createTestApp();
    const response = await t.request('/openapi.json');
    expect(response.status).toBe(200);
    document = (await response.json()) as Document;
    routes = (t.app.routes as Route[]).filter((route) => !route.hooks.detail?.hide);
  });

  afterAll(async () => {
    await t.close();
  });

  test('is valid OpenAPI 3.1 by an independent validator', async () => {
    expect(document.openapi.startsWith('3.1')).toBe(true);
    const result = await validate(structuredClone(document) as never);
    if (!result.valid) throw new Error(compileErrors(result));
    expect(result.valid).toBe(true);
  });

  test('documents every route of the app, and nothing else', () => {
    const documented = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );
    const served = routes.map((route) => `${route.method} ${openApiPath(route.path)}`);
    expect(documented.sort()).toEqual(served.sort());
  });

  test('each route: its real path and query parameters, optional when they have a default', () => {
    for (const route of routes) {
      const operation = document.paths[openApiPath(route.path)]![route.method.toLowerCase()]!;
      const parameters = operation.parameters ?? [];
      const named = (place: string) =>
        parameters
          .filter((p) => p.in === place)
          .map((p) => p.name)
          .sort();
      expect({ route: route.path, path: named('path') }).toEqual({ route: route.path, path: keysOf(route.hooks.params) });
      expect({ route: route.path, query: named('query') }).toEqual({ route: route.path, query: keysOf(route.hooks.query) });
      for (const parameter of parameters.filter((p) => p.in === 'query')) {
        const field = (route.hooks.query as z.ZodObject).shape[parameter.name] as z.ZodType;
        // Optional exactly when the schema accepts the parameter's absence.
        const optional = field.safeParse(undefined).success;
        expect({ route: route.path, name: parameter.name, required: parameter.required }).toEqual({
          route: route.path,
          name: parameter.name,
          required: !optional,
        });
        const absent = field.safeParse(undefined);
        if (absent.success && absent.data !== undefined) {
          expect({ route: route.path, name: parameter.name, default: parameter.schema.default }).toMatchObject({ default: expect.anything() });
        }
      }
    }
  });

  test('the operations that take an Idempotency-Key document the header, required where its absence is a 400, and no other does', () => {
    const idempotent: Record<string, boolean> = {
      'POST /v1/me/keys': false,
      'POST /v2/audit/exports': true,
      'POST /v2/renders': true,
      'POST /v2/scenes': true,
      'POST /v2/trade-intents': true,
      'POST /v2/trade-intents/{trade_intent_id}/cancel': false,
      'POST /v2/webhooks': true,
    };
    const documented: Record<string, boolean> = {};
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const header = (operation.parameters ?? []).find((parameter) => parameter.in === 'header' && parameter.name === 'Idempotency-Key');
        if (header) documented[`${method.toUpperCase()} ${path}`] = header.required === true;
      }
    }
    expect(documented).toEqual(idempotent);
  });

  test('each route with a body documents it as JSON, from the schema that validates it', () => {
    const withBodies = routes.filter((route) => isZod(route.hooks.body));
    expect(withBodies.length).toBeGreaterThanOrEqual(5);
    for (const route of routes) {
      const operation = document.paths[openApiPath(route.path)]![route.method.toLowerCase()]!;
      if (!isZod(route.hooks.body)) {
        expect({ route: route.path, body: operation.requestBody }).toEqual({ route: route.path, body: undefined });
        continue;
      }
      expect(Object.keys(operation.requestBody!.content)).toEqual(['application/json']);
      expect(operation.requestBody!.content['application/json']!.schema).toEqual(requestJsonSchema(route.hooks.body) as never);
    }
  });

  test('error answers are listed with the shared error body: 400 for inputs, 401/403/429/503 for keyed routes, 413/415 for bodies', () => {
    expect(document.components.schemas.Error).toBeDefined();
    for (const route of routes) {
      const operation = document.paths[openApiPath(route.path)]![route.method.toLowerCase()]!;
      const statuses = Object.keys(operation.responses);
      expect(statuses.some((status) => status.startsWith('2'))).toBe(true);
      const expected = [
        ...(isZod(route.hooks.query) || isZod(route.hooks.params) || isZod(route.hooks.body) ? ['400'] : []),
        ...(isZod(route.hooks.body) ? ['413', '415'] : []),
      ];
      const security = (operation as { security?: Record<string, unknown>[] }).security ?? [];
      if (security.some((entry) => 'apiKey' in entry)) expected.push('401', '403', '429', '503');
      if (security.some((entry) => 'session' in entry)) expected.push('401');
      for (const status of expected)
        expect({ route: `${route.method} ${route.path}`, status, listed: statuses.includes(status) }).toEqual({
          route: `${route.method} ${route.path}`,
          status,
          listed: true,
        });
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) >= 400) expect(response.content?.['application/json']?.schema.$ref).toBe('#/components/schemas/Error');
      }
    }
  });

  test('front matter: a servers entry, one described tag per area, and an introduction that gets a newcomer a key', async () => {
    const front = document as unknown as {
      info: { description: string };
      servers: { url: string }[];
      tags: { name: string; description?: string }[];
    };
    // No PUBLIC_BASE_URL: the origin the document was fetched from (the test app's requests use http://localhost).
    expect(front.servers.map((server) => server.url)).toEqual(['http://localhost']);
    const configured = createTestApp({ config: { PUBLIC_BASE_URL: 'https://api.example.test' } });
    try {
      const served = (await (await configured.request('/openapi.json')).json()) as { servers: { url: string }[] };
      expect(served.servers.map((server) => server.url)).toEqual(['https://api.example.test']);
    } finally {
      await configured.close();
    }
    // Every tag an operation uses is declared once, with a description, and no two differ only in spacing or case.
    const used = new Set(
      Object.values(document.paths).flatMap((operations) => Object.values(operations).flatMap((operation) => (operation as { tags?: string[] }).tags ?? [])),
    );
    expect(front.tags.map((tag) => tag.name).sort()).toEqual([...used].sort());
    for (const tag of front.tags) expect({ tag: tag.name, described: (tag.description ?? '').length > 10 }).toEqual({ tag: tag.name, described: true });
    const folded = front.tags.map((tag) => tag.name.toLowerCase().replace(/[^a-z]/g, ''));
    expect(new Set(folded).size).toBe(folded.length);
    // The introduction: a key in two steps, the free budget, where the weights are, and the keyless API.
    for (const needle of [
      'POST /v1/accounts',
      'POST /v1/me/keys',
      'X-API-Key',
      '120 units per minute',
      '20 000 per UTC day',
      'GET /v2/usage',
      'GET /v1/prices',
    ]) {
      expect({ needle, found: front.info.description.includes(needle) }).toEqual({ needle, found: true });
    }
  });

  test('every operation has a description of its own, ending in its access, and a unique operationId', () => {
    const ids = new Set<string>();
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations) as [
        string,
        Operation & { description?: string; operationId?: string; summary?: string },
      ][]) {
        const name = `${method.toUpperCase()} ${path}`;
        const [own, access] = (operation.description ?? '').split(/\n\n(?=\*\*Access:\*\*)/);
        expect({ name, own: (own ?? '').length > 40, access: access?.startsWith('**Access:**') ?? false }).toEqual({ name, own: true, access: true });
        expect({ name, summary: (operation.summary ?? '').length > 0 && (operation.summary ?? '').length <= 60 }).toEqual({ name, summary: true });
        expect({ name, duplicate: ids.has(operation.operationId!) }).toEqual({ name, duplicate: false });
        ids.add(operation.operationId!);
      }
    }
  });

  test('a date-time parameter is documented as such', () => {
    const history = document.paths['/v2/prices/{catalog_id}/history']!.get!;
    const from = history.parameters!.find((p) => p.name === 'from')!;
    expect(from.schema).toMatchObject({ type: 'string', format: 'date-time' });
    expect(from.required).toBe(false);
  });
});

/**
 * The success bodies documented in /openapi.json (docs/design.md §6) are mostly not enforced at run time
 * (api/openapi.ts routeResponses), so this checks them against what the routes really answer: a
 * workspace of its own with catalog items, two ingest runs (latest prices and rollups), two index
 * calculations, a price snapshot, an audit export and a webhook, then one real request per route.
 */
// A scene for the renders case (its own, so the case does not lean on the scenes cases' order).
const RENDER_SCENE = {
  schema: 3,
  kind: 'service-viewer-scene',
  name: 'Render bodies',
  presentation: { background: { type: 'transparent', value: null }, camera: { preset: 'front' }, quality: 'draft' },
  chrome: { showControls: false, allowFullscreen: false, watermark: null },
};

describe('documented success bodies match what the routes answer', () => {
  const blobDir = mkdtempSync(join(tmpdir(), 'openapi-bodies-'));
  let t: TestApp;
  let document: Document;
  const ajv = new Ajv2020({
    strict: false,
    allErrors: true,
    // The only format the response schemas use; zod adds a pattern for it too.
    formats: { uuid: /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i },
  });
  const checked = new Set<string>();

  /** Validates a 2xx JSON answer against the schema documented for its operation and status. */
  async function conforms(method: string, template: string, response: Response): Promise<unknown> {
    const operation = `${method} ${template}`;
    // app.handle hands back the bytes as sent: undo a negotiated Content-Encoding as a client would.
    const bytes = new Uint8Array(await response.arrayBuffer());
    const encoding = response.headers.get('content-encoding');
    const text = new TextDecoder().decode(encoding === 'gzip' ? Bun.gunzipSync(bytes) : encoding === 'br' ? brotliDecompressSync(bytes) : bytes);
    expect({ operation, status: response.status, ok: response.ok }).toEqual({ operation, status: response.status, ok: true });
    const documented = document.paths[template]?.[method.toLowerCase()]?.responses[String(response.status)];
    const schema = documented?.content?.['application/json']?.schema;
    if (!schema) throw new Error(`${operation}: no JSON schema documented for ${response.status} (${text.slice(0, 200)})`);
    // Refs into the document's components resolve against the root of the compiled schema.
    const validateBody = ajv.compile({ ...schema, components: document.components });
    const body = JSON.parse(text) as unknown;
    if (!validateBody(body)) throw new Error(`${operation} ${response.status}: ${ajv.errorsText(validateBody.errors)}\n${text.slice(0, 500)}`);
    checked.add(operation);
    return body;
  }

  const minutesAgo = (count: number) => new Date(Date.now() - count * 60_000);
  const catalog = generateCatalog();
  const rifles = catalog.filter((item) => item.weapon === 'AK-47' && !item.stattrak && !item.souvenir).slice(0, 6);
  const doppler = catalog.find((item) => item.type === 'knife' && item.phases.includes('phase-2'))!;
  let slot = 0;

  async function ingest(source: string, at: Date, step: number) {
    const runId = (await claimIngestRun(t.deps.sql, source, (slot += 1), at))!;
    const rows = [
      ...rifles.map((item, index) => ({
        catalog_id: item.catalog_id,
        version: 'default',
        price: (12.5 + index * 3.25 + step * 0.37).toFixed(2),
        median_price: index % 2 ? (13 + index).toFixed(2) : null,
        quantity: index % 3 ? 4 + index : null,
        source_time: at,
      })),
      { catalog_id: doppler.catalog_id, version: 'default', price: '512.00', median_price: null, quantity: 2, source_time: at },
      { catalog_id: doppler.catalog_id, version: 'phase-2', price: (640 + step).toFixed(2), median_price: '650.10', quantity: 1, source_time: at },
    ];
    await writeIngestRun(t.deps.sql, { runId, source, rows, ingestedAt: at, staleAfterSeconds: 300, received: rows.length, skipped: 0, unknownNames: 0 });
  }

  /** The `exports` pool's run handler over this suite's database and blob directory. */
  function runExport(exportId: string) {
    const queue = t.deps.queues.exports;
    const context: PoolContext = {
      config: testConfig({ BLOB_DIR: blobDir }),
      sql: t.deps.sql,
      redis: t.deps.redis,
      log: createLogger({ level: 'silent', name: 'openapi-test' }),
      now: () => new Date(),
      queue,
      enqueue: (name, payload, jobOptions) => enqueue(queue, name, payload, jobOptions),
    };
    const handler = new Map(exportsPool.handlers(context)).get('audit_export.run' satisfies JobName)!;
    return handler({ export_id: exportId } as never, { jobId: undefined, attempt: 1, scheduledAt: new Date() });
  }

  beforeAll(async () => {
    // The keyless per-address limit is counted in Redis per address: other suites of the run share 127.0.0.1.
    t = await scratchTestApp({
      tag: 'openapi_bodies',
      config: { BLOB_DIR: blobDir, WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', PUBLIC_PRICES_RATE_LIMIT: '1000000' },
    });
    await t.deps.ready();
    document = (await (await t.request('/openapi.json')).json()) as Document;
    await syncCatalog(t.deps.sql, [...rifles, doppler]);
    for (const [step, at] of [minutesAgo(20), minutesAgo(10)].entries()) {
      for (const source of ['skinport', 'csfloat']) await ingest(source, at, step);
      await calculateMarketIndex(t.deps.sql, { marketplace: 'skinport', now: () => new Date(at.getTime() + 1_000) });
    }
    await buildPriceSnapshot(t.deps.sql, new Date());
  }, 60_000);

  afterAll(async () => {
    await t?.close();
    rmSync(blobDir, { recursive: true, force: true });
  });

  test('identity, platform and meta routes', async () => {
    const email = `bodies-${crypto.randomUUID()}@example.test`;
    const post = (path: string, json: unknown, headers: Record<string, string> = {}) => t.request(path, { method: 'POST', json, headers });
    const account = (await conforms('POST', '/v1/accounts', await post('/v1/accounts', { email, password: TEST_PASSWORD, workspace_name: 'Bodies' }))) as {
      session: { token: string };
    };
    await conforms('POST', '/v1/sessions', await post('/v1/sessions', { email, password: TEST_PASSWORD }));
    const session = { authorization: `Bearer ${account.session.token}` };
    await conforms('POST', '/v1/me/keys', await post('/v1/me/keys', { label: 'bodies', scopes: ['prices:read'] }, session));
    await conforms('GET', '/v1/me/keys', await t.request('/v1/me/keys', { headers: session }));
    // /health documents its 200 body: fresh exchange rates too (the always-on fx source, docs/design.md §14).
    await seedFreshFxRates(t.deps.sql);
    for (const path of ['/health', '/v2/health', '/v2/status', '/v2/meta/scopes', '/v2/meta/capabilities', '/v2/meta/currencies']) {
      await conforms('GET', path, await t.request(path));
    }
    const ws = await workspaceWithKey(t, { tier: 'enterprise' });
    await conforms('GET', '/v2/me', await t.request('/v2/me', { headers: ws.keyHeaders }));
    const usage = (await conforms('GET', '/v2/usage', await t.request('/v2/usage', { headers: ws.keyHeaders }))) as { key: { operations: unknown[] } };
    expect(usage.key.operations.length).toBeGreaterThan(0);
  });

  test('catalog, price and market routes over seeded prices, rollups and index calculations', async () => {
    const ws = await workspaceWithKey(t, { tier: 'enterprise' });
    const get = async (template: string, path: string) => conforms('GET', template, await t.request(path, { headers: ws.keyHeaders }));
    const items = (await get('/v2/catalog/items', '/v2/catalog/items?limit=3')) as { data: unknown[]; next_cursor: string | null };
    expect(items.data).toHaveLength(3);
    expect(items.next_cursor).not.toBeNull();
    const prices = (await get('/v2/prices/{catalog_id}', `/v2/prices/${doppler.catalog_id}`)) as { versions: { sources: unknown[] }[] };
    expect(prices.versions.length).toBe(2);
    const history = (await get('/v2/prices/{catalog_id}/history', `/v2/prices/${doppler.catalog_id}/history?marketplace=skinport&granularity=10m`)) as {
      data: { points: unknown[] }[];
    };
    expect(history.data.length).toBeGreaterThan(0);
    const latest = (await get('/v2/market-index/cs2', '/v2/market-index/cs2?marketplace=skinport')) as { id: string; inception: boolean };
    expect(latest.inception).toBe(false);
    const levels = (await get('/v2/market-index/cs2/history', '/v2/market-index/cs2/history?marketplace=skinport&limit=1')) as {
      data: unknown[];
      next_cursor: string | null;
    };
    expect(levels.data).toHaveLength(1);
    expect(levels.next_cursor).not.toBeNull();
    const constituents = (await get(
      '/v2/market-index/cs2/calculations/{calculation_id}/constituents',
      `/v2/market-index/cs2/calculations/${latest.id}/constituents?limit=2`,
    )) as { data: { ratio: string | null }[] };
    expect(constituents.data.some((item) => item.ratio !== null)).toBe(true);
    for (const query of ['', '?marketplace=skinport&fresh_only=true', '?segment=type&value=knife']) {
      await get('/v2/market/summary', `/v2/market/summary${query}`);
    }
  });

  test('keyless price documents, as JSON and after content negotiation', async () => {
    const list = (await conforms('GET', '/v1/prices', await t.request('/v1/prices'))) as { items: { versions?: unknown }[] };
    expect(list.items.some((item) => item.versions !== undefined)).toBe(true);
    await conforms('GET', '/v1/prices', await t.request('/v1/prices?source=csfloat', { headers: { 'accept-encoding': 'gzip' } }));
    const item = `/v1/prices/${encodeURIComponent(doppler.market_hash_name)}`;
    await conforms('GET', '/v1/prices/{market_hash_name}', await t.request(item, { headers: { 'accept-encoding': 'br' } }));
  });

  test('audit events and exports, and webhooks', async () => {
    const ws = await workspaceWithKey(t, { tier: 'enterprise' });
    const headers = { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() };
    const webhook = { url: 'http://127.0.0.1:9/hook', event_types: ['prices.updated'], description: 'bodies' };
    const created = (await conforms('POST', '/v2/webhooks', await t.request('/v2/webhooks', { method: 'POST', headers, json: webhook }))) as { id: string };
    await conforms('GET', '/v2/webhooks', await t.request('/v2/webhooks', { headers: ws.keyHeaders }));
    await conforms('GET', '/v2/webhooks/{webhook_id}', await t.request(`/v2/webhooks/${created.id}`, { headers: ws.keyHeaders }));
    await conforms('GET', '/v2/webhooks/{webhook_id}/deliveries', await t.request(`/v2/webhooks/${created.id}/deliveries`, { headers: ws.keyHeaders }));
    // Management (docs/design.md §15). The retried delivery is written by hand (no pool runs here), and the
    // endpoint is deleted afterwards, so a worker of another suite that takes the job only cancels it.
    const hookPath = `/v2/webhooks/${created.id}`;
    await conforms(
      'PATCH',
      '/v2/webhooks/{webhook_id}',
      await t.request(hookPath, { method: 'PATCH', headers: ws.keyHeaders, json: { description: 'patched' } }),
    );
    await conforms('POST', '/v2/webhooks/{webhook_id}/rotate-secret', await t.request(`${hookPath}/rotate-secret`, { method: 'POST', headers: ws.keyHeaders }));
    const testEvent = (await conforms(
      'POST',
      '/v2/webhooks/{webhook_id}/test',
      await t.request(`${hookPath}/test`, { method: 'POST', headers: ws.keyHeaders }),
    )) as { event_id: string };
    const [failed] = await t.deps.sql<{ id: string }[]>`
      with published as (update event_outbox set published_at = now() where id = ${testEvent.event_id} returning id, event_type)
      insert into webhook_deliveries (id, endpoint_id, event_id, event_type, state, attempt_count, created_at, settled_at, last_error)
      select gen_random_uuid(), ${created.id}, id, event_type, 'failed', 1, now(), now(), 'HTTP 500' from published
      returning id`;
    await conforms(
      'POST',
      '/v2/webhooks/{webhook_id}/deliveries/{delivery_id}/retry',
      await t.request(`${hookPath}/deliveries/${failed!.id}/retry`, { method: 'POST', headers: ws.keyHeaders }),
    );
    expect((await t.request(hookPath, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);

    const events = (await conforms('GET', '/v2/audit/events', await t.request('/v2/audit/events', { headers: ws.keyHeaders }))) as { data: unknown[] };
    expect(events.data.length).toBeGreaterThan(0);
    const range = { from: minutesAgo(60).toISOString(), to: new Date().toISOString() };
    const exportHeaders = { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() };
    const receipt = (await conforms(
      'POST',
      '/v2/audit/exports',
      await t.request('/v2/audit/exports', { method: 'POST', headers: exportHeaders, json: range }),
    )) as {
      export_id: string;
    };
    await runExport(receipt.export_id);
    await conforms('GET', '/v2/audit/exports', await t.request('/v2/audit/exports', { headers: ws.keyHeaders }));
    const done = (await conforms(
      'GET',
      '/v2/audit/exports/{export_id}',
      await t.request(`/v2/audit/exports/${receipt.export_id}`, { headers: ws.keyHeaders }),
    )) as {
      download_url: string;
    };
    // The download is the stored gzip file, documented without a JSON body.
    const url = new URL(done.download_url);
    const download = await t.request(`${url.pathname}${url.search}`);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/gzip');
    const documented = document.paths['/v2/audit/exports/{export_id}/download']!.get!.responses['200']!;
    expect(documented.content).toBeUndefined();
  });

  test('game platform profiles and inventories, served from fresh cached copies (no Steam call)', async () => {
    const ws = await workspaceWithKey(t, { tier: 'enterprise' });
    const steamId = '76561198012345678';
    const now = new Date();
    await t.deps.sql`
      insert into steam_profiles (steam_id, profile, fetched_at)
      values (${steamId}, ${t.deps.sql.json({ persona_name: 'bodies', profile_url: null, avatar_url: null, visibility: 'public', country_code: 'DE', created_at: null, last_logoff: null })}, ${now})`;
    const withKey = createTestApp({ config: { DATABASE_URL: t.deps.config.DATABASE_URL, STEAM_WEB_API_KEY: 'unused-while-cached' } });
    try {
      await conforms('GET', '/v2/profiles/{gameplatform_id}', await withKey.request(`/v2/profiles/${steamId}`, { headers: ws.keyHeaders }));
    } finally {
      await withKey.close();
    }
    const certificate = encodeCertificate({
      item: { definition_index: 7 },
      state: { paint_index: 282, paint_seed: 1, wear: 0.25, stickers: [{ slot: 0, sticker_id: 76 }] },
    });
    await storeInventorySnapshot(
      t.deps.sql,
      steamId,
      [
        {
          assets: [{ assetid: '1', classid: '2', instanceid: '0', amount: '1' }],
          descriptions: [
            {
              classid: '2',
              instanceid: '0',
              market_hash_name: rifles[0]!.market_hash_name,
              name: 'x',
              type: 'Rifle',
              tradable: 1,
              marketable: 1,
              actions: [{ link: 'steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20%propid:6%', name: 'Inspect' }],
            },
          ],
          asset_properties: [{ assetid: '1', asset_properties: [{ propertyid: 6, string_value: certificate }] }],
          total_inventory_count: 1,
        },
      ],
      now,
    );
    const body = (await conforms(
      'GET',
      '/v2/inventories/{gameplatform_id}',
      await t.request(`/v2/inventories/${steamId}?valuation=skinport`, { headers: ws.keyHeaders }),
    )) as {
      data: { value: unknown }[];
    };
    expect(body.data).toHaveLength(1);
    expect(body.data[0]!.value).not.toBeNull();
  });

  test('connected accounts: connect and the listing (the callback needs a provider: test/gameplatform/gameplatform-accounts.test.ts)', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write'] });
    await conforms(
      'POST',
      '/v2/gameplatform/accounts/connect',
      await t.request('/v2/gameplatform/accounts/connect', { method: 'POST', headers: ws.keyHeaders }),
    );
    const [account] = await t.deps.sql<{ account_id: string }[]>`
      insert into gameplatform_accounts (workspace_id, steam_id, persona_name, connected_at) values (${ws.workspace.id}, '76561198012345678', 'bodies', now()) returning account_id`;
    const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
    const token = `${part({ typ: 'JWT', alg: 'EdDSA' })}.${part({ sub: '76561198012345678', exp: Math.floor(Date.now() / 1000) + 3600 })}.c2lnbmF0dXJl`;
    const stored = await t.request(`/v2/gameplatform/accounts/${account!.account_id}/steam-token`, { method: 'PUT', headers: ws.keyHeaders, json: { token } });
    await conforms('PUT', '/v2/gameplatform/accounts/{account_id}/steam-token', stored);
    await conforms('GET', '/v2/gameplatform/accounts', await t.request('/v2/gameplatform/accounts', { headers: ws.keyHeaders }));
    // docs/design.md §17: a stored trade (as the trade-history poll writes it) and the counterparty's counts.
    const asset = { appid: 730, contextid: '2', assetid: '11', amount: '1', classid: '1', instanceid: '0', new_assetid: '12', new_contextid: '2' };
    await t.deps.sql`
      insert into gameplatform_trades (account_id, trade_id, workspace_id, counterparty_steam_id, status, initiated_at, rollback_trade_id, assets_given, assets_received, reversed_at, first_seen_at, updated_at)
      values (${account!.account_id}, '7300000000000000001', ${ws.workspace.id}, '76561198067890123', 12, now(), null, ${t.deps.sql.json([asset])}, '[]', now(), now(), now())`;
    const trades = (await conforms(
      'GET',
      '/v2/gameplatform/accounts/{account_id}/trades',
      await t.request(`/v2/gameplatform/accounts/${account!.account_id}/trades`, { headers: ws.keyHeaders }),
    )) as { data: unknown[] };
    expect(trades.data).toHaveLength(1);
    await conforms(
      'GET',
      '/v2/gameplatform/counterparties/{gameplatform_id}',
      await t.request('/v2/gameplatform/counterparties/76561198067890123', { headers: ws.keyHeaders }),
    );
  });

  test('trade intents: create, list, read and cancel over a stored snapshot (no Steam call)', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['trade:write'] });
    const steamId = '76561198000000042';
    const [account] = await t.deps.sql<{ account_id: string }[]>`
      insert into gameplatform_accounts (workspace_id, steam_id, persona_name, connected_at) values (${ws.workspace.id}, ${steamId}, 'bodies', now()) returning account_id`;
    const snapshotId = crypto.randomUUID();
    await t.deps.sql`insert into inventory_snapshots (id, steam_id, fetched_at, total_assets) values (${snapshotId}, ${steamId}, now(), 1)`;
    await t.deps.sql`insert into inventory_assets (snapshot_id, position, asset_id, tradable, catalog_id, record)
      values (${snapshotId}, 0, '11', true, ${rifles[0]!.catalog_id}, ${t.deps.sql.json({ asset_id: '11', trade_hold_until: null, market_hash_name: null, state: {} })})`;
    const body = {
      kind: 'create_offer',
      account_id: Number(account!.account_id),
      external_reference: 'bodies',
      expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      partner_steam_id: '76561198000000043',
      give: ['11'],
    };
    const headers = { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() };
    const intent = (await conforms('POST', '/v2/trade-intents', await t.request('/v2/trade-intents', { method: 'POST', headers, json: body }))) as {
      trade_intent_id: string;
    };
    await conforms('GET', '/v2/trade-intents', await t.request('/v2/trade-intents', { headers: ws.keyHeaders }));
    await conforms('GET', '/v2/trade-intents/{trade_intent_id}', await t.request(`/v2/trade-intents/${intent.trade_intent_id}`, { headers: ws.keyHeaders }));
    await conforms(
      'POST',
      '/v2/trade-intents/{trade_intent_id}/cancel',
      await t.request(`/v2/trade-intents/${intent.trade_intent_id}/cancel`, { method: 'POST', headers: ws.keyHeaders }),
    );
  });

  test('inspect decode: a masked certificate with stickers', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['inspect:read'] });
    const link = encodeCertificate(
      {
        item: { definition_index: 7 },
        state: { paint_index: 44, paint_seed: 661, wear: 0.07, stattrak: { value: 3 }, stickers: [{ slot: 0, sticker_id: 76, offset_x: 0.1 }] },
        rarity: 6,
        item_id: '42',
      },
      { key: 0xe3 },
    );
    await conforms('POST', '/v2/inspect/decode', await t.request('/v2/inspect/decode', { method: 'POST', headers: ws.keyHeaders, json: { link } }));
  });

  test('scenes: create, list, read latest and a revision, update with If-Match', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['media:write'] });
    const scene = {
      schema: 3,
      kind: 'service-viewer-scene',
      name: 'Bodies',
      presentation: { background: { type: 'gradient', value: '#101010,#202020' }, camera: { preset: 'inspect' }, quality: 'high' },
      chrome: { showControls: true, allowFullscreen: false, watermark: 'bodies' },
    };
    const create = await t.request('/v2/scenes', { method: 'POST', headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() }, json: scene });
    const etag = create.headers.get('etag')!;
    const created = (await conforms('POST', '/v2/scenes', create)) as { scene_id: string };
    await conforms('GET', '/v2/scenes', await t.request('/v2/scenes', { headers: ws.keyHeaders }));
    await conforms('GET', '/v2/scenes/{scene_id}', await t.request(`/v2/scenes/${created.scene_id}`, { headers: ws.keyHeaders }));
    await conforms(
      'GET',
      '/v2/scenes/{scene_id}/revisions/{revision}',
      await t.request(`/v2/scenes/${created.scene_id}/revisions/1`, { headers: ws.keyHeaders }),
    );
    await conforms(
      'PUT',
      '/v2/scenes/{scene_id}',
      await t.request(`/v2/scenes/${created.scene_id}`, { method: 'PUT', headers: { ...ws.keyHeaders, 'if-match': etag }, json: scene }),
    );
  });

  test('viewer sessions: a session for a scene of the workspace', async () => {
    // Its own app over an item-files directory holding the model (the route checks only that it exists).
    const itemFiles = mkdtempSync(join(tmpdir(), 'openapi-item-files-'));
    const viewer = createTestApp({ config: { ITEM_FILES_DIR: itemFiles } });
    try {
      mkdirSync(join(itemFiles, 'models'));
      writeFileSync(join(itemFiles, 'models', '7.glb'), 'glTF');
      const ws = await workspaceWithKey(viewer, { scopes: ['media:write'] });
      const scene = await createScene(
        viewer.deps.sql,
        parseSceneBody({
          schema: 3,
          kind: 'service-viewer-scene',
          name: 'Viewer',
          presentation: { background: { type: 'transparent', value: null }, camera: { preset: 'front' }, quality: 'draft' },
          chrome: { showControls: false, allowFullscreen: false, watermark: null },
        }),
        { workspaceId: ws.workspace.id, actor: { type: 'system', id: null }, requestId: 'openapi', now: new Date() },
      );
      const item = { item: { family: 'weapon', definition_index: 7 }, state: { paint_index: 44, paint_seed: 1, wear: 0.2, stattrak: { value: 0 } } };
      await conforms(
        'POST',
        '/v2/viewer/sessions',
        await viewer.request('/v2/viewer/sessions', { method: 'POST', headers: ws.keyHeaders, json: { item, scene_id: scene.document.scene_id } }),
      );
    } finally {
      await viewer.close();
      rmSync(itemFiles, { recursive: true, force: true });
    }
  });

  test('renders: create (202, then 200 for the same request), read queued and succeeded', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const scene = await createScene(t.deps.sql, parseSceneBody(RENDER_SCENE), {
      workspaceId: ws.workspace.id,
      actor: { type: 'system', id: null },
      requestId: 'openapi',
      now: new Date(),
    });
    const body = {
      item: { item: { family: 'weapon', definition_index: 7 }, state: {} },
      scene_id: scene.document.scene_id,
      output: { width: 64, height: 64, format: 'png', background: 'transparent' },
    };
    const create = () => t.request('/v2/renders', { method: 'POST', headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() }, json: body });
    const render = (await conforms('POST', '/v2/renders', await create())) as { render_id: string };
    await conforms('POST', '/v2/renders', await create());
    await conforms('GET', '/v2/renders/{render_id}', await t.request(`/v2/renders/${render.render_id}`, { headers: ws.keyHeaders }));
    await t.deps
      .sql`update renders set state = 'succeeded', blob_key = 'renders/x.png', bytes = 1, sha256 = 'ab', completed_at = now() where render_id = ${render.render_id}`;
    await conforms('GET', '/v2/renders/{render_id}', await t.request(`/v2/renders/${render.render_id}`, { headers: ws.keyHeaders }));
  });

  test('every documented JSON success body was checked against a real answer', () => {
    const withJsonBodies = Object.entries(document.paths).flatMap(([path, operations]) =>
      Object.entries(operations)
        .filter(([, operation]) =>
          Object.entries(operation.responses).some(([status, response]) => status.startsWith('2') && response.content?.['application/json']),
        )
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    // A prices.updated page needs a delivered event behind a signed URL; test/webhooks/webhooks-price-events.test.ts
    // reads those, and Elysia validates that route's body at run time.
    // The OpenID callback answers only for an assertion the Steam fake signs: test/gameplatform/gameplatform-accounts.test.ts
    // checks its JSON body against this document.
    const elsewhere = ['GET /v2/webhooks/events/{event_id}/pages/{page}', 'GET /v2/gameplatform/openid/callback'];
    expect(withJsonBodies.filter((operation) => !elsewhere.includes(operation)).sort()).toEqual([...checked].sort());
  });
});
