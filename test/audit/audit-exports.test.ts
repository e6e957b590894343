import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AuditEvent, insertAuditEvent, type NewAuditEvent } from '../../shared/audit/events.ts';
import type { AuditExportJob } from '../../shared/audit/exports-model.ts';
import { leaseAuditExport } from '../../shared/audit/exports-repository.ts';
import { auditExportJobId } from '../../shared/audit/exports-service.ts';
import { enqueue, type JobName } from '../../shared/jobs/queues.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { exportsPool } from '../../workers/exports/index.ts';
import type { PoolContext } from '../../workers/pool.ts';
import { createKey, createTestApp, errorOf, eventually, type TestApp, testClock, testConfig, workspaceWithKey } from '../helpers.ts';
import { type PrivateRedis, startPrivateRedis } from '../private-redis.ts';
import { insertGeneratedAuditEvents } from './audit-exports-fixtures.ts';

/**
 * Audit exports through the API (docs/interface.md §2.3, §3, §4, §7, §8; docs/design.md §7), with the `exports` pool's real
 * handlers invoked in this process against the real Postgres, Redis and a scratch BLOB_DIR, so each
 * step (lease, write, sweep) happens exactly when a test says. test/audit/audit-exports-e2e.test.ts runs
 * the same pool as separate worker processes.
 */
const blobDir = mkdtempSync(join(tmpdir(), 'audit-exports-'));
const PUBLIC_BASE_URL = 'https://exports.example.test';
const t = createTestApp({ config: { BLOB_DIR: blobDir, PUBLIC_BASE_URL } });
afterAll(async () => {
  await t.close();
  rmSync(blobDir, { recursive: true, force: true });
});

const log = createLogger({ level: 'silent', name: 'audit-exports-test' });

/** The pool's handlers over this test's database, queue and blob directory. */
function exportsWorker(options: { config?: Record<string, string>; now?: () => Date } = {}) {
  const config = testConfig({ BLOB_DIR: blobDir, ...options.config });
  const queue = t.deps.queues.exports;
  const context: PoolContext = {
    config,
    sql: t.deps.sql,
    redis: t.deps.redis,
    log,
    now: options.now ?? (() => new Date()),
    queue,
    enqueue: (name, payload, jobOptions) => enqueue(queue, name, payload, jobOptions),
  };
  const handlers = new Map(exportsPool.handlers(context));
  const invoke = (name: JobName, payload: unknown) => handlers.get(name)!(payload as never, { jobId: undefined, attempt: 1, scheduledAt: new Date() });
  return {
    run: (exportId: string) => invoke('audit_export.run', { export_id: exportId }) as Promise<Record<string, unknown>>,
    sweep: () => invoke('audit_export.sweep', {}) as Promise<Record<string, number>>,
  };
}

// A fixed stretch of 2021, long before any test ran: events placed here never mix with sign-up events.
const FROM = '2021-03-01T00:00:00.000Z';
const TO = '2021-03-02T00:00:00.000Z';
const at = (iso: string, offsetMs = 0) => new Date(Date.parse(iso) + offsetMs);

const exporter = () => workspaceWithKey(t, { tier: 'pro' });

function post(app: TestApp, key: string | null, body: unknown, idempotencyKey: string | null = crypto.randomUUID()) {
  const headers: Record<string, string> = {};
  if (key) headers['x-api-key'] = key;
  if (idempotencyKey) headers['idempotency-key'] = idempotencyKey;
  return app.request('/v2/audit/exports', { method: 'POST', headers, json: body });
}

async function created(key: string, range: { from: string; to: string } = { from: FROM, to: TO }): Promise<AuditExportJob> {
  const response = await post(t, key, range);
  if (response.status !== 201) throw new Error(`export creation failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as AuditExportJob;
}

function getExport(app: TestApp, key: string | null, id: string) {
  return app.request(`/v2/audit/exports/${id}`, { headers: key ? { 'x-api-key': key } : {} });
}

async function job(key: string, id: string, app: TestApp = t): Promise<AuditExportJob> {
  const response = await getExport(app, key, id);
  if (response.status !== 200) throw new Error(`reading the export failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as AuditExportJob;
}

function list(key: string | null, query: Record<string, string> = {}) {
  const search = new URLSearchParams(query).toString();
  return t.request(`/v2/audit/exports${search ? `?${search}` : ''}`, { headers: key ? { 'x-api-key': key } : {} });
}

type Page = { data: AuditExportJob[]; next_cursor: string | null };

async function page(key: string, query: Record<string, string> = {}): Promise<Page> {
  const response = await list(key, query);
  if (response.status !== 200) throw new Error(`listing failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as Page;
}

/** The download URL as a request path of the in-process app. */
const pathOf = (url: string) => {
  const parsed = new URL(url);
  return `${parsed.pathname}${parsed.search}`;
};

const expectError = async (response: Response, status: number, code: string) => {
  expect(response.status).toBe(status);
  expect((await errorOf(response)).code).toBe(code);
};

const event = (workspaceId: string, occurredAt: Date, overrides: Partial<NewAuditEvent> = {}): NewAuditEvent => ({
  workspaceId,
  eventType: 'thing.exported',
  resourceType: 'thing',
  resourceId: crypto.randomUUID(),
  outcome: 'succeeded',
  actor: { type: 'system', id: null },
  occurredAt,
  ...overrides,
});

function flipChar(text: string, index: number): string {
  const char = text[index]!;
  return `${text.slice(0, index)}${char === 'A' ? 'B' : 'A'}${text.slice(index + 1)}`;
}

describe('POST /v2/audit/exports', () => {
  test('creates a queued job (201), records audit_export.requested with the request id, and enqueues its BullMQ job', async () => {
    const ws = await exporter();
    const response = await post(t, ws.key, { from: FROM, to: TO });
    expect(response.status).toBe(201);
    const body = (await response.json()) as AuditExportJob;
    expect(body).toEqual({
      export_id: expect.any(String),
      state: 'queued',
      from: FROM,
      to: TO,
      created_at: expect.any(String),
      updated_at: body.created_at,
      attempts: 0,
      leased_until: null,
      completed_at: null,
      failed_at: null,
      event_count: null,
      bytes: null,
      sha256: null,
      expires_at: null,
      download_url: null,
      download_url_expires_at: null,
      failure_reason: null,
    });
    expect(body.export_id).toMatch(/^[0-9a-f-]{36}$/);

    const events = await t.request(`/v2/audit/events?event_type=audit_export.requested`, { headers: ws.keyHeaders });
    const { data } = (await events.json()) as { data: AuditEvent[] };
    expect(data).toHaveLength(1);
    expect(data[0]).toMatchObject({
      resource_type: 'audit_export',
      resource_id: body.export_id,
      outcome: 'accepted',
      actor: { type: 'api_key', id: ws.keyId },
      request_id: response.headers.get('x-request-id'),
      metadata: { from: FROM, to: TO },
    });
    expect(await t.deps.queues.exports.getJobState(auditExportJobId({ id: body.export_id, attempts: 0 }))).not.toBe('unknown');
  });

  test('replays the original job with 200 when the key and range repeat, and creates nothing more', async () => {
    const ws = await exporter();
    const idempotencyKey = crypto.randomUUID();
    const first = await post(t, ws.key, { from: FROM, to: TO }, idempotencyKey);
    expect(first.status).toBe(201);
    const original = (await first.json()) as AuditExportJob;

    const replay = await post(t, ws.key, { from: FROM, to: TO }, idempotencyKey);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(original);
    expect((await page(ws.key)).data.map((entry) => entry.export_id)).toEqual([original.export_id]);
  });

  test('answers 409 when the key is reused with another range', async () => {
    const ws = await exporter();
    const idempotencyKey = crypto.randomUUID();
    expect((await post(t, ws.key, { from: FROM, to: TO }, idempotencyKey)).status).toBe(201);
    const reused = await post(t, ws.key, { from: FROM, to: at(TO, 1).toISOString() }, idempotencyKey);
    await expectError(reused, 409, 'idempotency_key_reused');
    expect((await page(ws.key)).data).toHaveLength(1);
  });

  test('concurrent identical requests create exactly one job', async () => {
    const ws = await exporter();
    const idempotencyKey = crypto.randomUUID();
    const responses = await Promise.all(Array.from({ length: 5 }, () => post(t, ws.key, { from: FROM, to: TO }, idempotencyKey)));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    // The others replay (200) or were refused while the first was still running (409 in use).
    for (const status of statuses) expect([200, 201, 409]).toContain(status);
    expect((await page(ws.key)).data).toHaveLength(1);
  });

  test('requires an Idempotency-Key (400)', async () => {
    const ws = await exporter();
    await expectError(await post(t, ws.key, { from: FROM, to: TO }, null), 400, 'idempotency_key_required');
  });

  test('refuses an invalid range or body with 400 naming the field', async () => {
    const ws = await exporter();
    const now = Date.now();
    const iso = (ms: number) => new Date(ms).toISOString();
    const cases: [unknown, string][] = [
      [{ from: TO, to: FROM }, 'body.from'],
      [{ from: FROM, to: FROM }, 'body.from'],
      [{ from: iso(now - 3_600_000), to: iso(now + 120_000) }, 'body.to'],
      [{ from: FROM, to: at(FROM, 32 * 86_400_000 + 1).toISOString() }, 'body.to'],
      [{ from: FROM }, 'body.to'],
      [{ to: TO }, 'body.from'],
      [{ from: '2021-03-01', to: TO }, 'body.from'],
      [{ from: '2021-03-01T00:00:00', to: TO }, 'body.from'],
      [{ from: FROM, to: 'yesterday' }, 'body.to'],
      [{ from: FROM, to: TO, format: 'csv' }, 'body'],
    ];
    for (const [body, field] of cases) {
      const response = await post(t, ws.key, body);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_request');
      expect(error.details!.some((detail) => detail.field.startsWith(field))).toBe(true);
    }
    const malformed = await t.request('/v2/audit/exports', {
      method: 'POST',
      headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID(), 'content-type': 'application/json' },
      body: '{"from":',
    });
    await expectError(malformed, 400, 'malformed_json');
    expect((await page(ws.key)).data).toEqual([]);
  });

  test('accepts exactly 32 days, a range ending now, and offsets other than Z', async () => {
    const ws = await exporter();
    expect((await post(t, ws.key, { from: FROM, to: at(FROM, 32 * 86_400_000).toISOString() })).status).toBe(201);
    const now = new Date(Date.now() - 1_000);
    expect((await post(t, ws.key, { from: new Date(now.getTime() - 60_000).toISOString(), to: now.toISOString() })).status).toBe(201);
    const offset = await created(ws.key, { from: '2021-03-01T01:00:00+01:00', to: '2021-03-01T12:00:00.5+02:00' });
    expect({ from: offset.from, to: offset.to }).toEqual({ from: '2021-03-01T00:00:00.000Z', to: '2021-03-01T10:00:00.500Z' });
  });

  test('401 without a valid key; 403 without audit:export, recorded as a rejected event', async () => {
    const ws = await exporter();
    await expectError(await post(t, null, { from: FROM, to: TO }), 401, 'unauthorized');
    await expectError(await post(t, 'cs2_not-a-real-key', { from: FROM, to: TO }), 401, 'unauthorized');
    const reader = await createKey(t, ws.token, { scopes: ['audit:read'] });
    const denied = await post(t, reader.key, { from: FROM, to: TO });
    expect(denied.status).toBe(403);
    const error = await errorOf(denied);
    expect(error.code).toBe('insufficient_scope');
    expect(error.message).toContain('audit:export');
    const events = (await (await t.request('/v2/audit/events?event_type=request.denied', { headers: ws.keyHeaders })).json()) as { data: AuditEvent[] };
    expect(events.data.find((entry) => entry.request_id === denied.headers.get('x-request-id'))).toMatchObject({
      resource_id: 'audit_exports.create',
      outcome: 'rejected',
      metadata: { status: 403, reason: 'insufficient_scope', required_scope: 'audit:export' },
    });
    expect((await page(ws.key)).data).toEqual([]);
  });
});

describe('GET /v2/audit/exports/{export_id}', () => {
  test('returns the job (200); 404 for an unknown id; 400 for a malformed id', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    expect(await job(ws.key, receipt.export_id)).toEqual(receipt);
    await expectError(await getExport(t, ws.key, crypto.randomUUID()), 404, 'not_found');
    for (const malformed of ['not-a-uuid', '123', `${receipt.export_id}x`]) {
      await expectError(await getExport(t, ws.key, malformed), 400, 'invalid_request');
    }
  });

  test("another workspace's export is 404 and never listed (workspace isolation)", async () => {
    const a = await exporter();
    const b = await exporter();
    const receipt = await created(a.key);
    await expectError(await getExport(t, b.key, receipt.export_id), 404, 'not_found');
    expect((await page(b.key)).data).toEqual([]);
  });

  test('401 without a valid key; 403 without audit:export (the scope shared/http/operations.ts names)', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    await expectError(await getExport(t, null, receipt.export_id), 401, 'unauthorized');
    const reader = await createKey(t, ws.token, { scopes: ['audit:read'] });
    const denied = await getExport(t, reader.key, receipt.export_id);
    expect(denied.status).toBe(403);
    expect((await errorOf(denied)).message).toContain('audit:export');
  });
});

describe('GET /v2/audit/exports', () => {
  test('pages newest first, 25 by default, 1 to 100, following next_cursor to the end', async () => {
    const ws = await exporter();
    const ids: string[] = [];
    for (let index = 0; index < 27; index += 1) ids.push((await created(ws.key)).export_id);
    const first = await page(ws.key);
    expect(first.data.map((entry) => entry.export_id)).toEqual(ids.slice().reverse().slice(0, 25));
    expect(first.next_cursor).toBeString();
    const second = await page(ws.key, { cursor: first.next_cursor! });
    expect(second.data.map((entry) => entry.export_id)).toEqual(ids.slice(0, 2).reverse());
    expect(second.next_cursor).toBeNull();

    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const current: Page = await page(ws.key, { limit: '4', ...(cursor ? { cursor } : {}) });
      seen.push(...current.data.map((entry) => entry.export_id));
      cursor = current.next_cursor;
    } while (cursor);
    expect(seen).toEqual(ids.slice().reverse());
    expect((await page(ws.key, { limit: '100' })).data).toHaveLength(27);
    for (const limit of ['0', '101', 'x', '1.5']) await expectError(await list(ws.key, { limit }), 400, 'invalid_request');
  });

  test('the state filter narrows the listing; unknown states and parameters are 400', async () => {
    const ws = await exporter();
    const queued = await created(ws.key);
    const leased = await created(ws.key);
    // What a worker does first: take the lease.
    await leaseAuditExport(t.deps.sql, {
      exportId: leased.export_id,
      token: crypto.randomUUID(),
      leasedBy: 'test',
      now: new Date(),
      leaseMs: 60_000,
      maxAttempts: 3,
    });
    const only = async (state: string) => (await page(ws.key, { state })).data.map((entry) => entry.export_id);
    expect(await only('queued')).toEqual([queued.export_id]);
    expect(await only('leased')).toEqual([leased.export_id]);
    expect(await only('completed')).toEqual([]);
    expect(await only('failed')).toEqual([]);
    const leasedJob = (await page(ws.key, { state: 'leased' })).data[0]!;
    expect(leasedJob.attempts).toBe(1);
    expect(Date.parse(leasedJob.leased_until!)).toBeGreaterThan(Date.now());
    await expectError(await list(ws.key, { state: 'running' }), 400, 'invalid_request');
    await expectError(await list(ws.key, { status: 'queued' }), 400, 'invalid_request');
  });

  test('cursors are bound to the state filter and the workspace; tampered ones are 400 invalid_cursor', async () => {
    const ws = await exporter();
    const other = await exporter();
    for (let index = 0; index < 3; index += 1) await created(ws.key);
    const cursor = (await page(ws.key, { limit: '1' })).next_cursor!;
    const queuedCursor = (await page(ws.key, { limit: '1', state: 'queued' })).next_cursor!;
    expect((await list(ws.key, { limit: '1', cursor })).status).toBe(200);
    expect((await list(ws.key, { state: 'queued', cursor: queuedCursor })).status).toBe(200);

    await expectError(await list(ws.key, { state: 'queued', cursor }), 400, 'invalid_cursor');
    await expectError(await list(ws.key, { cursor: queuedCursor }), 400, 'invalid_cursor');
    await expectError(await list(ws.key, { state: 'failed', cursor: queuedCursor }), 400, 'invalid_cursor');
    await expectError(await list(other.key, { cursor }), 400, 'invalid_cursor');
    const [payload, signature] = cursor.split('.') as [string, string];
    await expectError(await list(ws.key, { cursor: `${flipChar(payload, 5)}.${signature}` }), 400, 'invalid_cursor');
    await expectError(await list(ws.key, { cursor: `${payload}.${flipChar(signature, 3)}` }), 400, 'invalid_cursor');
    for (const garbage of ['garbage', 'a.b', `${cursor}.extra`]) await expectError(await list(ws.key, { cursor: garbage }), 400, 'invalid_cursor');
  });

  test('401 without a valid key; 403 without audit:read', async () => {
    const ws = await exporter();
    await expectError(await list(null), 401, 'unauthorized');
    const exporterOnly = await createKey(t, ws.token, { scopes: ['audit:export'] });
    const denied = await list(exporterOnly.key);
    expect(denied.status).toBe(403);
    expect((await errorOf(denied)).message).toContain('audit:read');
  });
});

/** Events around the range's edges and some with secrets; returns what the listing shows for the range. */
async function seedEvents(ws: { workspace: { id: string }; keyHeaders: Record<string, string> }) {
  const inside = [
    event(ws.workspace.id, at(FROM), { eventType: 'edge.from' }),
    event(ws.workspace.id, at(FROM, 3_600_000), {
      eventType: 'with.secrets',
      metadata: { password: 'hunter2', nested: { api_key: 'k', list: [{ token: 't', keep: 1 }], Authorization: 'Bearer x' }, note: 'kept' },
    }),
    event(ws.workspace.id, at(FROM, 3_600_000), { eventType: 'same.time', actor: { type: 'api_key', id: crypto.randomUUID() }, requestId: 'req-1' }),
    event(ws.workspace.id, at(TO, -1), { eventType: 'edge.to', outcome: 'failed', source: 'gameplatform' }),
  ];
  const outside = [event(ws.workspace.id, at(FROM, -1), { eventType: 'before.from' }), event(ws.workspace.id, at(TO), { eventType: 'at.to' })];
  for (const each of [...inside, ...outside]) await insertAuditEvent(t.deps.sql, each);
  const listing = await t.request(`/v2/audit/events?from=${FROM}&to=${TO}&limit=200`, { headers: ws.keyHeaders });
  const { data } = (await listing.json()) as { data: AuditEvent[] };
  expect(data).toHaveLength(inside.length);
  return data;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const ndjson = (bytes: Uint8Array<ArrayBuffer>) =>
  new TextDecoder()
    .decode(Bun.gunzipSync(bytes))
    .split('\n')
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as AuditEvent);

describe('a completed export', () => {
  test('carries count, size, digest and expiry, a 5-minute URL under PUBLIC_BASE_URL, and its file holds exactly the range, redacted', async () => {
    const ws = await exporter();
    const listed = await seedEvents(ws);
    const receipt = await created(ws.key);
    expect(await exportsWorker().run(receipt.export_id)).toMatchObject({ state: 'completed', event_count: listed.length });

    const before = Date.now();
    const done = await job(ws.key, receipt.export_id);
    expect(done).toMatchObject({ state: 'completed', attempts: 1, leased_until: null, event_count: listed.length, failure_reason: null });
    expect(done.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(Date.parse(done.expires_at!) - Date.parse(done.completed_at!)).toBe(24 * 3_600_000);
    expect(done.download_url!.startsWith(`${PUBLIC_BASE_URL}/v2/audit/exports/${receipt.export_id}/download?`)).toBe(true);
    const validFor = Date.parse(done.download_url_expires_at!) - before;
    expect(validFor).toBeGreaterThan(298_000);
    expect(validFor).toBeLessThanOrEqual(300_000);

    // No API key: the signed URL is the credential.
    const download = await t.request(pathOf(done.download_url!));
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('application/gzip');
    expect(download.headers.get('content-encoding')).toBeNull();
    expect(download.headers.get('content-disposition')).toBe(`attachment; filename="audit-export-${receipt.export_id}.ndjson.gz"`);
    expect(download.headers.get('etag')).toBe(`"${done.sha256}"`);
    expect(download.headers.get('x-request-id')).toBeTruthy();
    const bytes = new Uint8Array(await download.arrayBuffer());
    expect(bytes.length).toBe(done.bytes!);
    expect(Number(download.headers.get('content-length'))).toBe(done.bytes!);
    expect(sha256(bytes)).toBe(done.sha256!);

    // Oldest first: the listing (newest first) reversed, field for field, secrets redacted alike.
    const lines = ndjson(bytes);
    expect(lines).toEqual(listed.slice().reverse());
    expect(lines.map((line) => line.event_type)).toEqual(['edge.from', ...lines.slice(1, 3).map((line) => line.event_type), 'edge.to']);
    const secretive = lines.find((line) => line.event_type === 'with.secrets')!;
    expect(secretive.metadata).toEqual({
      password: '[REDACTED]',
      nested: { api_key: '[REDACTED]', list: [{ token: '[REDACTED]', keep: 1 }], Authorization: '[REDACTED]' },
      note: 'kept',
    });

    // Exactly one file for the export: the one the job names.
    const directory = join(blobDir, 'audit-exports', ws.workspace.id, receipt.export_id);
    expect(readdirSync(directory)).toHaveLength(1);
  });

  test('records audit_export.completed and an outbox event for the workspace in the same transaction', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    await exportsWorker().run(receipt.export_id);
    const done = await job(ws.key, receipt.export_id);
    const events = (await (await t.request('/v2/audit/events?event_type=audit_export.completed', { headers: ws.keyHeaders })).json()) as { data: AuditEvent[] };
    expect(events.data).toHaveLength(1);
    expect(events.data[0]).toMatchObject({
      resource_type: 'audit_export',
      resource_id: receipt.export_id,
      outcome: 'succeeded',
      actor: { type: 'system', id: null },
      metadata: { export_id: receipt.export_id, event_count: 0, bytes: done.bytes, sha256: done.sha256, attempts: 1 },
    });
    const outbox = await t.deps.sql<{ workspace_id: string; payload: Record<string, unknown> }[]>`
      select workspace_id, payload from event_outbox where event_type = 'audit_export.completed' and payload->>'export_id' = ${receipt.export_id}`;
    expect(outbox).toHaveLength(1);
    expect(outbox[0]!.workspace_id).toBe(ws.workspace.id);
    expect(outbox[0]!.payload).toMatchObject({ state: 'completed', from: FROM, to: TO, event_count: 0, sha256: done.sha256, expires_at: done.expires_at });
    // An empty range is still a valid (empty) file.
    expect(ndjson(new Uint8Array(await (await t.request(pathOf(done.download_url!))).arrayBuffer()))).toEqual([]);
  });

  test('every read signs a new URL; listing carries one too; without PUBLIC_BASE_URL the request origin is used', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    await exportsWorker().run(receipt.export_id);
    const clock = testClock(new Date());
    const later = createTestApp({ config: { BLOB_DIR: blobDir }, now: clock.now });
    try {
      const first = await job(ws.key, receipt.export_id, later);
      clock.advance(2_000);
      const second = await job(ws.key, receipt.export_id, later);
      expect(first.download_url).not.toBe(second.download_url);
      expect(first.download_url!.startsWith(`http://localhost/v2/audit/exports/${receipt.export_id}/download?`)).toBe(true);
      for (const url of [first.download_url!, second.download_url!]) expect((await later.request(pathOf(url))).status).toBe(200);
      const listed = (await page(ws.key, { state: 'completed' })).data;
      expect(listed.map((entry) => entry.export_id)).toEqual([receipt.export_id]);
      expect(listed[0]!.download_url).toStartWith(PUBLIC_BASE_URL);
    } finally {
      await later.close();
    }
  });

  test('a tampered, foreign, unsigned or expired URL is 403', async () => {
    const ws = await exporter();
    const [one, two] = [await created(ws.key), await created(ws.key)];
    const worker = exportsWorker();
    await worker.run(one.export_id);
    await worker.run(two.export_id);
    const url = new URL((await job(ws.key, one.export_id)).download_url!);
    const signature = url.searchParams.get('signature')!;
    const expires = url.searchParams.get('expires')!;
    const path = (id: string, query: Record<string, string>) => `/v2/audit/exports/${id}/download?${new URLSearchParams(query)}`;

    expect((await t.request(path(one.export_id, { expires, signature }))).status).toBe(200);
    await expectError(await t.request(path(one.export_id, { expires, signature: flipChar(signature, 0) })), 403, 'invalid_download_url');
    await expectError(await t.request(path(one.export_id, { expires: String(Number(expires) + 3_600), signature })), 403, 'invalid_download_url');
    await expectError(await t.request(path(two.export_id, { expires, signature })), 403, 'invalid_download_url');
    await expectError(await t.request(path(one.export_id, { expires })), 403, 'invalid_download_url');
    await expectError(await t.request(path(one.export_id, {})), 403, 'invalid_download_url');
    await expectError(await t.request(path('not-a-uuid', { expires, signature })), 403, 'invalid_download_url');

    const clock = testClock(new Date(Date.now() + 5 * 60_000 + 1_000));
    const later = createTestApp({ config: { BLOB_DIR: blobDir }, now: clock.now });
    try {
      await expectError(await later.request(path(one.export_id, { expires, signature })), 403, 'download_url_expired');
    } finally {
      await later.close();
    }
  });

  test('past retention the job has no URL, the sweeper deletes its file, and old URLs find nothing (404)', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    await exportsWorker().run(receipt.export_id);
    const done = await job(ws.key, receipt.export_id);
    const directory = join(blobDir, 'audit-exports', ws.workspace.id, receipt.export_id);
    expect(readdirSync(directory)).toHaveLength(1);

    // A day and a minute later: past the 24 h retention, while a URL minted just before it still verifies.
    const clock = testClock(new Date(Date.parse(done.expires_at!) - 60_000));
    const later = createTestApp({ config: { BLOB_DIR: blobDir }, now: clock.now });
    try {
      const lastUrl = (await job(ws.key, receipt.export_id, later)).download_url!;
      clock.advance(120_000);
      const expired = await job(ws.key, receipt.export_id, later);
      expect(expired).toMatchObject({ state: 'completed', download_url: null, download_url_expires_at: null, expires_at: done.expires_at });
      await expectError(await later.request(pathOf(lastUrl)), 404, 'not_found');

      const swept = await exportsWorker({ now: clock.now }).sweep();
      expect(swept.files_deleted).toBeGreaterThanOrEqual(1);
      expect(() => readdirSync(directory)).toThrow();
      const [row] = await t.deps.sql<{ blob_key: string | null; file_deleted_at: Date | null }[]>`
        select blob_key, file_deleted_at from audit_exports where id = ${receipt.export_id}`;
      expect(row).toEqual({ blob_key: null, file_deleted_at: expect.any(Date) });
      expect((await job(ws.key, receipt.export_id, later)).download_url).toBeNull();
    } finally {
      await later.close();
    }
  });
});

describe('leases, attempts and the sweeper', () => {
  test('a lease that runs out returns the job to queued with a new BullMQ job; the next worker completes it', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    // A worker that took the lease and died: nothing renews it.
    const leased = await leaseAuditExport(t.deps.sql, {
      exportId: receipt.export_id,
      token: crypto.randomUUID(),
      leasedBy: 'dead',
      now: new Date(),
      leaseMs: 60_000,
      maxAttempts: 3,
    });
    expect(leased?.state).toBe('leased');
    // While the lease holds, a second worker gets nothing.
    expect(await exportsWorker().run(receipt.export_id)).toEqual({ export_id: receipt.export_id, leased: false });

    const clock = testClock(new Date(Date.now() + 61_000));
    const swept = await exportsWorker({ now: clock.now }).sweep();
    expect(swept.leases_requeued).toBeGreaterThanOrEqual(1);
    expect(await job(ws.key, receipt.export_id)).toMatchObject({ state: 'queued', attempts: 1, leased_until: null });
    expect(await t.deps.queues.exports.getJobState(auditExportJobId({ id: receipt.export_id, attempts: 1 }))).not.toBe('unknown');

    await exportsWorker().run(receipt.export_id);
    expect(await job(ws.key, receipt.export_id)).toMatchObject({ state: 'completed', attempts: 2 });
  });

  test('the heartbeat keeps the lease of an export that outlasts it: no other worker can take the job meanwhile', async () => {
    const ws = await exporter();
    const range = { from: new Date('2021-07-01T00:00:00Z'), to: new Date('2021-07-20T00:00:00Z') };
    await insertGeneratedAuditEvents(t.deps.sql, { workspaceId: ws.workspace.id, ...range, count: 400_000 });
    const receipt = await created(ws.key, { from: range.from.toISOString(), to: range.to.toISOString() });
    const started = performance.now();
    let finished = false;
    const running = exportsWorker({ config: { EXPORT_LEASE_SECONDS: '1' } })
      .run(receipt.export_id)
      .finally(() => (finished = true));
    await eventually(async () => ((await job(ws.key, receipt.export_id)).state === 'leased' ? true : undefined), 10_000, 5);

    // A competing worker tries to lease the job every 50 ms for as long as the export runs.
    const leasedUntil = new Set<string>();
    let stolen = false;
    while (!finished) {
      const [row] = await t.deps.sql<{ leased_until: Date | null }[]>`select leased_until from audit_exports where id = ${receipt.export_id}`;
      if (row?.leased_until) leasedUntil.add(row.leased_until.toISOString());
      const competitor = await leaseAuditExport(t.deps.sql, {
        exportId: receipt.export_id,
        token: crypto.randomUUID(),
        leasedBy: 'competitor',
        now: new Date(),
        leaseMs: 60_000,
        maxAttempts: 3,
      });
      stolen ||= competitor !== null;
      await Bun.sleep(50);
    }
    expect(await running).toMatchObject({ state: 'completed', event_count: 400_000 });
    // The premise: the export ran longer than its 1 s lease, which was renewed along the way.
    expect(performance.now() - started).toBeGreaterThan(1_000);
    expect(leasedUntil.size).toBeGreaterThan(1);
    expect(stolen).toBe(false);
    expect(await job(ws.key, receipt.export_id)).toMatchObject({ state: 'completed', attempts: 1, event_count: 400_000 });
  }, 60_000);

  test('the last expired lease fails the job with a reason, audit_export.failed and an outbox event', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    await leaseAuditExport(t.deps.sql, {
      exportId: receipt.export_id,
      token: crypto.randomUUID(),
      leasedBy: 'dead',
      now: new Date(),
      leaseMs: 1_000,
      maxAttempts: 1,
    });
    const clock = testClock(new Date(Date.now() + 2_000));
    await exportsWorker({ now: clock.now, config: { EXPORT_MAX_ATTEMPTS: '1' } }).sweep();
    const failed = await job(ws.key, receipt.export_id);
    expect(failed).toMatchObject({ state: 'failed', attempts: 1, download_url: null, failed_at: clock.now().toISOString() });
    expect(failed.failure_reason).toContain('stopped responding');

    const events = (await (await t.request('/v2/audit/events?event_type=audit_export.failed', { headers: ws.keyHeaders })).json()) as { data: AuditEvent[] };
    expect(events.data).toHaveLength(1);
    expect(events.data[0]).toMatchObject({
      resource_id: receipt.export_id,
      outcome: 'failed',
      metadata: { attempts: 1, failure_reason: failed.failure_reason },
    });
    const outbox = await t.deps.sql`select 1 from event_outbox where event_type = 'audit_export.failed' and workspace_id = ${ws.workspace.id}`;
    expect(outbox).toHaveLength(1);
    // A failed job is final: no worker takes it again.
    expect(await exportsWorker().run(receipt.export_id)).toEqual({ export_id: receipt.export_id, leased: false });
  });

  test('a write error sends the job back to queued while attempts remain, then fails it', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    // A file where the blob directory should be: every write fails.
    const brokenDir = join(blobDir, `broken-${crypto.randomUUID()}`);
    writeFileSync(brokenDir, 'not a directory');
    const broken = exportsWorker({ config: { BLOB_DIR: brokenDir, EXPORT_MAX_ATTEMPTS: '2' } });
    expect(await broken.run(receipt.export_id)).toEqual({ export_id: receipt.export_id, state: 'queued' });
    expect(await job(ws.key, receipt.export_id)).toMatchObject({ state: 'queued', attempts: 1, failure_reason: null });
    expect(await broken.run(receipt.export_id)).toEqual({ export_id: receipt.export_id, state: 'failed' });
    const failed = await job(ws.key, receipt.export_id);
    expect(failed).toMatchObject({ state: 'failed', attempts: 2, failure_reason: 'Attempt 2 of 2 could not write the export file.' });
    // Failure reasons never carry internals (paths, error text).
    expect(failed.failure_reason).not.toContain(brokenDir);
  });

  test('the sweeper re-enqueues a queued job whose BullMQ job is missing', async () => {
    const ws = await exporter();
    const receipt = await created(ws.key);
    const jobId = auditExportJobId({ id: receipt.export_id, attempts: 0 });
    await t.deps.queues.exports.remove(jobId);
    expect(await t.deps.queues.exports.getJobState(jobId)).toBe('unknown');
    const swept = await exportsWorker().sweep();
    expect(swept.jobs_enqueued).toBeGreaterThanOrEqual(1);
    expect(await t.deps.queues.exports.getJobState(jobId)).not.toBe('unknown');
  });
});

test('GET /openapi.json documents the three operations and the download route', async () => {
  const body = (await (await t.request('/openapi.json')).json()) as { paths: Record<string, Record<string, unknown>> };
  expect(body.paths['/v2/audit/exports']!.post).toBeDefined();
  expect(body.paths['/v2/audit/exports']!.get).toBeDefined();
  expect(body.paths['/v2/audit/exports/{export_id}']!.get).toBeDefined();
  expect(body.paths['/v2/audit/exports/{export_id}/download']!.get).toBeDefined();
});

describe('Redis stopped', () => {
  let redis: PrivateRedis;
  let app: TestApp;

  beforeAll(async () => {
    redis = await startPrivateRedis();
    app = createTestApp({ config: { REDIS_URL: redis.url, BLOB_DIR: blobDir } });
    await eventually(async () => (app.deps.redis.status === 'ready' ? true : undefined));
  });

  afterAll(async () => {
    await redis?.kill();
    await app?.close();
  });

  test('all three export endpoints answer 503 usage_unavailable', async () => {
    const ws = await workspaceWithKey(app, { tier: 'pro' });
    const receipt = await created(ws.key);
    await redis.kill();
    await expectError(await post(app, ws.key, { from: FROM, to: TO }), 503, 'usage_unavailable');
    await expectError(await app.request('/v2/audit/exports', { headers: ws.keyHeaders }), 503, 'usage_unavailable');
    await expectError(await getExport(app, ws.key, receipt.export_id), 503, 'usage_unavailable');
  });
});
