import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { createHmac } from 'node:crypto';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import type { AuditEvent } from '../../shared/audit/events.ts';
import { type EventType, insertOutboxEvent } from '../../shared/events/outbox.ts';
import type { Scope } from '../../shared/http/scopes.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { attemptDelivery, type DeliveryDeps } from '../../shared/webhooks/deliver.ts';
import type { Delivery } from '../../shared/webhooks/deliveries.ts';
import { dispatchOutboxBatch } from '../../shared/webhooks/deliveries.ts';
import { pageLinksFromConfig } from '../../shared/webhooks/event-pages.ts';
import { SecretKeyring, secretKeyId, signingKeyOf } from '../../shared/webhooks/secrets.ts';
import { type RunningPools, startPools } from '../../workers/runtime.ts';
import { webhooksPool } from '../../workers/webhooks/index.ts';
import { createTestApp, errorOf, eventually, scratchTestApp, type TestApp, testConfig, workspaceWithKey } from '../helpers.ts';
import {
  type CreatedWebhook,
  createWebhook,
  type ReceivedRequest,
  removeQueueKeys,
  retireEndpoints,
  startReceiver,
  uniquePath,
  WEBHOOK_KEY_A,
  WEBHOOK_KEY_B,
} from './webhooks-fixtures.ts';

/**
 * Webhook management (docs/design.md §15): PATCH, rotate-secret, test, retry of a delivery, and disabling
 * after five days of failures, through the real plugins over real Postgres and Redis, delivering to
 * a real HTTP receiver on loopback. The API's clock is injectable (an offset from real time), so
 * a rotation can be made "25 hours ago"; the five-day rule is driven by calling the worker's
 * attempt function with a test clock before the real webhooks pool starts (so no worker races it).
 */
const RETRY_DELAYS_MS = [0, 200, 200];
const queuePrefix = `whmanage${process.pid}`;
const settings = {
  WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_DELAYS_MS: RETRY_DELAYS_MS.join(','),
  WEBHOOK_TIMEOUT_MS: '1000',
  QUEUE_PREFIX: queuePrefix,
};
let clockOffsetMs = 0;
const now = () => new Date(Date.now() + clockOffsetMs);
const t = createTestApp({ config: settings, now });
// The SSRF guard on (production settings), and no secret key at all.
const strict = createTestApp({ config: { ...settings, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } });
const keyless = createTestApp({ config: { ...settings, WEBHOOK_SECRET_KEY: '' } });
const receiver = startReceiver();
const workspaces: string[] = [];

afterAll(async () => {
  await retireEndpoints(t.deps.sql, workspaces);
  await receiver.stop();
  await removeQueueKeys(t.deps.config.REDIS_URL, queuePrefix);
  await Promise.all([t.close(), strict.close(), keyless.close()]);
});

type Workspace = Awaited<ReturnType<typeof workspaceWithKey>>;

async function workspace(app: TestApp = t, scopes: Scope[] = ['webhooks:read', 'webhooks:write', 'audit:read']): Promise<Workspace> {
  const ws = await workspaceWithKey(app, { scopes });
  workspaces.push(ws.workspace.id);
  return ws;
}

async function endpoint(ws: Workspace, path: string, eventTypes: EventType[] = ['render.completed'], app: TestApp = t): Promise<CreatedWebhook> {
  return createWebhook(app, ws.key, { url: receiver.url(path), event_types: eventTypes });
}

const call = (app: TestApp, method: string, path: string, ws: Workspace | null, json?: unknown, headers: Record<string, string> = {}) =>
  app.request(path, { method, headers: { ...(ws ? ws.keyHeaders : {}), ...headers }, ...(json === undefined ? {} : { json }) });
const patch = (ws: Workspace, id: string, json: unknown, app: TestApp = t) => call(app, 'PATCH', `/v2/webhooks/${id}`, ws, json);
const rotate = (ws: Workspace, id: string, app: TestApp = t) => call(app, 'POST', `/v2/webhooks/${id}/rotate-secret`, ws);
const sendTest = (ws: Workspace, id: string) => call(t, 'POST', `/v2/webhooks/${id}/test`, ws);
const retry = (ws: Workspace, id: string, deliveryId: string) => call(t, 'POST', `/v2/webhooks/${id}/deliveries/${deliveryId}/retry`, ws);

async function getEndpoint(ws: Workspace, id: string) {
  const response = await call(t, 'GET', `/v2/webhooks/${id}`, ws);
  expect(response.status).toBe(200);
  return (await response.json()) as CreatedWebhook & {
    enabled: boolean;
    disabled_reason: string | null;
    disabled_at: string | null;
    rotation_overlap_ends_at: string | null;
  };
}

async function deliveries(ws: Workspace, id: string): Promise<Delivery[]> {
  const response = await call(t, 'GET', `/v2/webhooks/${id}/deliveries`, ws);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Delivery[] }).data;
}

async function auditEvents(ws: Workspace, eventType: string): Promise<AuditEvent[]> {
  const response = await call(t, 'GET', `/v2/audit/events?event_type=${eventType}`, ws);
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: AuditEvent[] }).data;
}

function delivery(ws: Workspace, id: string, eventId: string, test: (found: Delivery) => boolean = () => true, timeoutMs = 15_000): Promise<Delivery> {
  return eventually(async () => {
    const found = (await deliveries(ws, id)).find((candidate) => candidate.event_id === eventId);
    return found && test(found) ? found : undefined;
  }, timeoutMs);
}

function received(path: string, count: number, timeoutMs = 15_000): Promise<ReceivedRequest[]> {
  return eventually(async () => (receiver.received(path).length >= count ? receiver.received(path) : undefined), timeoutMs);
}

function emit(ws: Workspace, type: EventType = 'render.completed') {
  return insertOutboxEvent(t.deps.sql, { type, workspaceId: ws.workspace.id, payload: { render_id: crypto.randomUUID() }, at: now() });
}

/** The v1 signatures of a request, in header order. */
const signaturesOf = (request: ReceivedRequest) => request.headers['webhook-signature']!.split(' ');
const expectedSignature = (secret: string, request: ReceivedRequest) =>
  `v1,${createHmac('sha256', signingKeyOf(secret)).update(`${request.headers['webhook-id']}.${request.headers['webhook-timestamp']}.${request.body}`).digest('base64')}`;
const verifies = (secret: string, request: ReceivedRequest) => {
  try {
    new Webhook(secret).verify(request.body, request.headers);
    return true;
  } catch {
    return false;
  }
};

/** A 4xx with the shared error body; returns its code. */
async function errorCode(response: Response, status: number): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get('x-request-id')).toBeTruthy();
  const error = await errorOf(response);
  expect(typeof error.message).toBe('string');
  expect(error.request_id).toBe(response.headers.get('x-request-id')!);
  return error.code;
}

const MEGABYTE = 'a'.repeat(1024 * 1024);
const MALFORMED_IDS = ['not-a-uuid', '%00', '%ED%A0%80', '123', `${'f'.repeat(5_000)}`, '0190b6a4-7c3e-7000-8000-00000000000g'];

describe('the five-day disable rule (injected clock, worker function called directly)', () => {
  const path = uniquePath('five-days');
  let answer = 500;
  const clock = { at: new Date() };
  const deps = (): DeliveryDeps => ({
    sql: t.deps.sql,
    log: createLogger({ level: 'silent', name: 'webhooks-management-test' }),
    keyring: SecretKeyring.fromConfig(t.deps.config),
    now: () => new Date(clock.at),
    retryDelaysMs: [0, 3_600_000, 3_600_000],
    timeoutMs: 2_000,
    allowPrivate: true,
    pageLinks: pageLinksFromConfig(t.deps.config),
  });
  beforeAll(() => receiver.respond(path, () => new Response('nope', { status: answer })));

  /** One event at the clock's time, fanned out and attempted once per new delivery. */
  async function eventAndAttempt(ws: Workspace) {
    const eventId = await insertOutboxEvent(t.deps.sql, { type: 'render.completed', workspaceId: ws.workspace.id, payload: { n: 1 }, at: clock.at });
    const batch = await dispatchOutboxBatch(t.deps.sql, 1_000, clock.at);
    // The outbox is the shared test database's: only this workspace's deliveries are this test's.
    const ids = batch.deliveries.map((delivery) => delivery.id);
    const ours =
      ids.length === 0
        ? []
        : await t.deps.sql<{ id: string }[]>`
      select d.id from webhook_deliveries d join webhook_endpoints e on e.id = d.endpoint_id
      where d.id = any(${ids}::uuid[]) and e.workspace_id = ${ws.workspace.id} order by d.created_at, d.id`;
    const results = [];
    for (const { id } of ours) results.push(await attemptDelivery(deps(), id));
    return { eventId, deliveries: ours.length, results };
  }

  test('every attempt failing for five days disables the endpoint; it then receives nothing until re-enabled', async () => {
    const ws = await workspace();
    clockOffsetMs = -10 * 86_400_000;
    const hook = await endpoint(ws, path);
    const start = now();
    clock.at = start;
    answer = 500;

    expect((await eventAndAttempt(ws)).results).toEqual([{ kind: 'retry', attempt: 1, delayMs: expect.any(Number) }]);
    clock.at = new Date(start.getTime() + 4 * 86_400_000);
    await eventAndAttempt(ws);
    expect((await getEndpoint(ws, hook.id)).enabled).toBe(true);

    // Five days after the first failure, with no success in between.
    clock.at = new Date(start.getTime() + 5 * 86_400_000);
    const last = await eventAndAttempt(ws);
    expect(last.results).toEqual([{ kind: 'failed', attempt: 1, endpointDisabled: true }]);
    const disabled = await getEndpoint(ws, hook.id);
    expect(disabled).toMatchObject({ enabled: false, status: 'disabled', disabled_reason: 'every delivery attempt failed for 5 days' });
    // Deliveries waiting for a retry were cancelled with it.
    expect((await deliveries(ws, hook.id)).map((one) => one.status).sort()).toEqual(['cancelled', 'cancelled', 'cancelled']);
    const [audit] = await auditEvents(ws, 'webhook_endpoint.disabled');
    expect(audit).toMatchObject({
      resource_id: hook.id,
      outcome: 'recorded',
      actor: { type: 'system', id: 'webhooks' },
      metadata: { reason: 'failing', failing_since: start.toISOString() },
    });

    // Disabled: events written meanwhile are not delivered to it, then or later; tests and retries are refused.
    answer = 200;
    const meanwhile = await eventAndAttempt(ws);
    expect(meanwhile.deliveries).toBe(0);
    expect(await errorCode(await sendTest(ws, hook.id), 409)).toBe('webhook_disabled');

    const enabled = await patch(ws, hook.id, { enabled: true });
    expect(enabled.status).toBe(200);
    expect(await enabled.json()).toMatchObject({ enabled: true, status: 'enabled', disabled_reason: null, disabled_at: null });
    const after = await eventAndAttempt(ws);
    expect(after.results).toEqual([{ kind: 'succeeded', attempt: 1 }]);
    expect((await deliveries(ws, hook.id)).find((one) => one.event_id === meanwhile.eventId)).toBeUndefined();
    clockOffsetMs = 0;
  });

  test('a success in between starts the five days again', async () => {
    const ws = await workspace();
    clockOffsetMs = -20 * 86_400_000;
    const hook = await endpoint(ws, path);
    const start = now();
    clock.at = start;
    answer = 500;
    expect((await eventAndAttempt(ws)).results).toEqual([{ kind: 'retry', attempt: 1, delayMs: expect.any(Number) }]);
    clock.at = new Date(start.getTime() + 3 * 86_400_000);
    answer = 200;
    expect((await eventAndAttempt(ws)).results).toEqual([{ kind: 'succeeded', attempt: 1 }]);
    answer = 500;
    clock.at = new Date(start.getTime() + 4 * 86_400_000);
    await eventAndAttempt(ws);
    clock.at = new Date(start.getTime() + 6 * 86_400_000);
    expect((await eventAndAttempt(ws)).results[0]).toMatchObject({ kind: 'retry' });
    expect((await getEndpoint(ws, hook.id)).enabled).toBe(true);
    clockOffsetMs = 0;
    // Leave nothing for the pool that starts next.
    await t.deps.sql`update webhook_deliveries set state = 'cancelled', next_attempt_at = null where endpoint_id = ${hook.id} and state = 'pending'`;
  });
});

describe('PATCH /v2/webhooks/{id}', () => {
  test('200 changes url, event types and description; GET shows them; audited with the changed fields and the host only', async () => {
    const ws = await workspace();
    const hook = await endpoint(ws, uniquePath('patch'));
    const newUrl = receiver.url(`${uniquePath('patched')}?token=receiver-own-token`);
    const response = await patch(ws, hook.id, {
      url: newUrl,
      event_types: ['trade_intent.created', 'render.failed', 'render.failed'],
      description: '  Trading bot  ',
    });
    expect(response.status).toBe(200);
    const updated = await response.json();
    expect(updated).toMatchObject({
      id: hook.id,
      url: newUrl,
      event_types: ['render.failed', 'trade_intent.created'],
      description: 'Trading bot',
      enabled: true,
      updated_at: expect.any(String),
    });
    expect(updated).not.toHaveProperty('secret');
    expect(await getEndpoint(ws, hook.id)).toMatchObject({ url: newUrl, event_types: ['render.failed', 'trade_intent.created'], description: 'Trading bot' });

    const [audit] = await auditEvents(ws, 'webhook_endpoint.updated');
    expect(audit).toMatchObject({
      resource_type: 'webhook_endpoint',
      resource_id: hook.id,
      outcome: 'succeeded',
      actor: { type: 'api_key', id: ws.keyId },
      request_id: response.headers.get('x-request-id'),
      metadata: { changed: ['url', 'event_types', 'description'], host: new URL(newUrl).host, enabled: true },
    });
    expect(JSON.stringify(audit)).not.toContain('receiver-own-token');

    const cleared = await patch(ws, hook.id, { description: null });
    expect(cleared.status).toBe(200);
    expect(await cleared.json()).toMatchObject({ description: null, url: newUrl });
  });

  test('enabled: false disables it (pending deliveries cancelled); enabled: true clears disabled_reason', async () => {
    const ws = await workspace();
    const hook = await endpoint(ws, uniquePath('toggle'));
    const off = await patch(ws, hook.id, { enabled: false });
    expect(off.status).toBe(200);
    expect(await off.json()).toMatchObject({
      enabled: false,
      status: 'disabled',
      disabled_reason: 'disabled by request (PATCH enabled: false)',
      disabled_at: expect.any(String),
    });
    expect((await getEndpoint(ws, hook.id)).enabled).toBe(false);
    const on = await patch(ws, hook.id, { enabled: true });
    expect(await on.json()).toMatchObject({ enabled: true, status: 'enabled', disabled_reason: null, disabled_at: null });
    const audits = await auditEvents(ws, 'webhook_endpoint.updated');
    expect(audits.map((audit) => audit.metadata)).toEqual([
      expect.objectContaining({ changed: ['enabled'], enabled: true }),
      expect.objectContaining({ changed: ['enabled'], enabled: false, disabled_reason: 'disabled by request (PATCH enabled: false)' }),
    ]);
  });

  test('400 for an empty body, unknown fields, bad values and hostile input, with the shared error body; nothing changes', async () => {
    const ws = await workspace();
    const hook = await endpoint(ws, uniquePath('bad-patch'));
    const bodies: unknown[] = [
      {},
      { enabled: true, secret: 'whsec_x' },
      { colour: 'blue' },
      { url: 'ftp://example.com/hook' },
      { url: 'not a url' },
      { url: '' },
      { event_types: [] },
      { event_types: ['price.exploded'] },
      { enabled: 'yes' },
      { description: '' },
      { description: 'a\u0000b' },
      { description: 'x\ud800y' },
      { url: `https://example.com/\u0000` },
      { url: 'https://example.com/\udfff' },
      { description: MEGABYTE.slice(0, 600) },
      { url: `https://example.com/${MEGABYTE.slice(0, 3_000)}` },
      { event_types: ['render.completed\u0000'] },
      null,
      [],
      'text',
    ];
    for (const body of bodies) {
      const response = await patch(ws, hook.id, body);
      expect({ body: JSON.stringify(body).slice(0, 80), code: await errorCode(response, 400) }).toEqual({
        body: JSON.stringify(body).slice(0, 80),
        code: 'invalid_request',
      });
    }
    // A body of a megabyte and more is refused before it is read.
    const huge = await patch(ws, hook.id, { description: MEGABYTE });
    expect([400, 413]).toContain(huge.status);
    await errorCode(huge, huge.status);
    expect(await getEndpoint(ws, hook.id)).toMatchObject({ url: hook.url, event_types: ['render.completed'], description: null, enabled: true });
  });

  test('400 when the new url is not https or is not a public address (SSRF guard on)', async () => {
    const ws = await workspace(strict);
    const hook = await createWebhook(strict, ws.key, { url: 'https://93.184.215.14/hooks', event_types: ['render.completed'] });
    for (const url of [
      'http://93.184.215.14/hooks',
      'https://127.0.0.1/x',
      'https://[::1]/x',
      'https://10.0.0.8/x',
      'https://169.254.169.254/latest',
      'https://user:pw@93.184.215.14/x',
    ]) {
      const response = await patch(ws, hook.id, { url }, strict);
      expect({ url, code: await errorCode(response, 400) }).toEqual({ url, code: 'invalid_request' });
    }
    const ok = await patch(ws, hook.id, { url: 'https://93.184.215.15/other' }, strict);
    expect(ok.status).toBe(200);
  });
});

describe('POST /v2/webhooks/{id}/rotate-secret', () => {
  test('200 with a new secret shown only here, stored only encrypted; the previous one is kept sealed for 24 h; audited without it', async () => {
    const ws = await workspace();
    const hook = await endpoint(ws, uniquePath('rotate'));
    const before = Date.now();
    const response = await rotate(ws, hook.id);
    expect(response.status).toBe(200);
    expect(response.headers.get('idempotent-replayed')).toBeNull();
    const rotated = (await response.json()) as { secret: string; previous_secret_expires_at: string };
    expect(Object.keys(rotated).sort()).toEqual(['previous_secret_expires_at', 'secret']);
    expect(rotated.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(rotated.secret).not.toBe(hook.secret);
    const expires = Date.parse(rotated.previous_secret_expires_at);
    expect(expires - before).toBeGreaterThanOrEqual(24 * 3_600_000 - 1_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(24 * 3_600_000 + 1_000);

    const [row] = await t.deps.sql<{ secret_ciphertext: Buffer; secret_key_id: string; previous_secret_ciphertext: Buffer; previous_secret_key_id: string }[]>`
      select secret_ciphertext, secret_key_id, previous_secret_ciphertext, previous_secret_key_id from webhook_endpoints where id = ${hook.id}`;
    const keyring = new SecretKeyring(Buffer.from(WEBHOOK_KEY_A, 'base64'));
    expect(keyring.open(hook.id, row!.secret_ciphertext, row!.secret_key_id)).toBe(rotated.secret);
    expect(keyring.open(hook.id, row!.previous_secret_ciphertext, row!.previous_secret_key_id)).toBe(hook.secret);
    for (const secret of [rotated.secret, hook.secret]) {
      expect(row!.secret_ciphertext.includes(Buffer.from(secret.slice(6), 'base64'))).toBe(false);
      expect(row!.previous_secret_ciphertext.includes(Buffer.from(secret.slice(6), 'base64'))).toBe(false);
    }

    const shown = await getEndpoint(ws, hook.id);
    expect(shown.rotation_overlap_ends_at).toBe(rotated.previous_secret_expires_at);
    expect(JSON.stringify(shown)).not.toContain(rotated.secret.slice(6));
    const list = await call(t, 'GET', '/v2/webhooks', ws);
    expect(await list.text()).not.toContain(rotated.secret.slice(6));

    const [audit] = await auditEvents(ws, 'webhook_endpoint.secret_rotated');
    expect(audit).toMatchObject({
      resource_id: hook.id,
      outcome: 'succeeded',
      actor: { type: 'api_key', id: ws.keyId },
      request_id: response.headers.get('x-request-id'),
    });
    const [stored] = await t.deps.sql<{ metadata: unknown }[]>`select metadata from audit_events where id = ${audit!.id}`;
    expect(JSON.stringify(stored!.metadata)).not.toContain(rotated.secret.slice(6));
    expect(JSON.stringify(stored!.metadata)).not.toContain(hook.secret.slice(6));
  });

  test('503 secret_storage_unavailable without WEBHOOK_SECRET_KEY; 404 for another workspace; 403 without webhooks:write; 400 for a malformed id', async () => {
    const ws = await workspace();
    const hook = await endpoint(ws, uniquePath('rotate-errors'));
    const keylessWs = await workspace(keyless);
    expect(await errorCode(await rotate(keylessWs, hook.id, keyless), 503)).toBe('secret_storage_unavailable');
    const other = await workspace();
    expect(await errorCode(await rotate(other, hook.id), 404)).toBe('not_found');
    expect(await errorCode(await rotate(ws, crypto.randomUUID()), 404)).toBe('not_found');
    const reader = await workspace(t, ['webhooks:read']);
    expect(await errorCode(await rotate(reader, hook.id), 403)).toBe('insufficient_scope');
    for (const id of MALFORMED_IDS) expect(await errorCode(await call(t, 'POST', `/v2/webhooks/${id}/rotate-secret`, ws), 400)).toBe('invalid_request');
    // The secret is unchanged by all of that.
    const [row] = await t.deps.sql<
      { previous_secret_ciphertext: Buffer | null }[]
    >`select previous_secret_ciphertext from webhook_endpoints where id = ${hook.id}`;
    expect(row!.previous_secret_ciphertext).toBeNull();
  });
});

describe('test events', () => {
  test('400 for malformed ids, 404 for another workspace, 403 without webhooks:write', async () => {
    const ws = await workspace();
    const hook = await endpoint(ws, uniquePath('test-errors'));
    for (const id of MALFORMED_IDS) expect(await errorCode(await call(t, 'POST', `/v2/webhooks/${id}/test`, ws), 400)).toBe('invalid_request');
    const other = await workspace();
    expect(await errorCode(await sendTest(other, hook.id), 404)).toBe('not_found');
    const reader = await workspace(t, ['webhooks:read', 'audit:read']);
    expect(await errorCode(await sendTest(reader, hook.id), 403)).toBe('insufficient_scope');
    const [denied] = await auditEvents(reader, 'request.denied');
    expect(denied).toMatchObject({
      outcome: 'rejected',
      resource_id: 'webhooks.test',
      metadata: { status: 403, reason: 'insufficient_scope', required_scope: 'webhooks:write' },
    });
  });
});

describe('with the webhooks pool running', () => {
  let pool: RunningPools | undefined;
  beforeAll(async () => {
    clockOffsetMs = 0;
    pool = await startPools([webhooksPool], testConfig(settings), createLogger({ level: 'silent', name: 'webhooks-management-test' }));
  });
  afterAll(async () => {
    await pool?.stop(5_000);
  });

  describe('signatures across a rotation', () => {
    test('for 24 h deliveries carry both signatures, new first, each verifying with the standardwebhooks library', async () => {
      const ws = await workspace();
      const path = uniquePath('overlap');
      const hook = await endpoint(ws, path);
      const rotated = (await (await rotate(ws, hook.id)).json()) as { secret: string };
      const eventId = await emit(ws);
      const [request] = await received(path, 1);
      expect(request!.headers['webhook-id']).toBe(eventId);
      expect(signaturesOf(request!)).toEqual([expectedSignature(rotated.secret, request!), expectedSignature(hook.secret, request!)]);
      expect(verifies(rotated.secret, request!)).toBe(true);
      expect(verifies(hook.secret, request!)).toBe(true);
      expect(verifies(`whsec_${Buffer.alloc(32, 7).toString('base64')}`, request!)).toBe(false);

      // Rotating again replaces the previous secret: the first one no longer signs.
      const again = (await (await rotate(ws, hook.id)).json()) as { secret: string };
      await emit(ws);
      const second = (await received(path, 2))[1]!;
      expect(signaturesOf(second)).toEqual([expectedSignature(again.secret, second), expectedSignature(rotated.secret, second)]);
      expect(verifies(again.secret, second)).toBe(true);
      expect(verifies(rotated.secret, second)).toBe(true);
      expect(verifies(hook.secret, second)).toBe(false);
    });

    test('after the 24 h only the new secret signs (a rotation made 25 h ago by the API clock)', async () => {
      const ws = await workspace();
      const path = uniquePath('after-overlap');
      const hook = await endpoint(ws, path);
      clockOffsetMs = -25 * 3_600_000;
      const response = await rotate(ws, hook.id);
      clockOffsetMs = 0;
      const rotated = (await response.json()) as { secret: string; previous_secret_expires_at: string };
      expect(Date.parse(rotated.previous_secret_expires_at)).toBeLessThan(Date.now());
      expect((await getEndpoint(ws, hook.id)).rotation_overlap_ends_at).toBeNull();
      await emit(ws);
      const [request] = await received(path, 1);
      expect(signaturesOf(request!)).toEqual([expectedSignature(rotated.secret, request!)]);
      expect(verifies(rotated.secret, request!)).toBe(true);
      expect(verifies(hook.secret, request!)).toBe(false);
      // The sweeper destroys the expired previous secret.
      await eventually(async () => {
        const [row] = await t.deps.sql<
          { previous_secret_ciphertext: Buffer | null }[]
        >`select previous_secret_ciphertext from webhook_endpoints where id = ${hook.id}`;
        return row!.previous_secret_ciphertext === null ? true : undefined;
      }, 15_000);
    });
  });

  describe('POST /v2/webhooks/{id}/test', () => {
    test('202 {event_id}: a webhook.test event reaches that endpoint only, whatever its event types; audited', async () => {
      const ws = await workspace();
      const targetPath = uniquePath('test-target');
      const siblingPath = uniquePath('test-sibling');
      const hook = await endpoint(ws, targetPath, ['render.completed']);
      // Another endpoint of the workspace subscribed to webhook.test itself, and one of another workspace.
      const sibling = await endpoint(ws, siblingPath, ['webhook.test', 'render.failed']);
      const other = await workspace();
      const otherPath = uniquePath('test-other');
      await endpoint(other, otherPath, ['webhook.test']);

      const response = await sendTest(ws, hook.id);
      expect(response.status).toBe(202);
      const { event_id: eventId } = (await response.json()) as { event_id: string };
      expect(eventId).toMatch(/^[0-9a-f-]{36}$/);
      const [request] = await received(targetPath, 1);
      expect(request!.headers['webhook-id']).toBe(eventId);
      const body = new Webhook(hook.secret).verify(request!.body, request!.headers) as { type: string; data: { webhook_id: string } };
      expect(body).toMatchObject({ id: eventId, type: 'webhook.test', data: { webhook_id: hook.id } });
      expect(await delivery(ws, hook.id, eventId, (found) => found.status === 'succeeded')).toMatchObject({ event_type: 'webhook.test' });
      // Fanned out in the same statement as the target's delivery: had they been meant to get it, they would have.
      expect(await deliveries(ws, sibling.id)).toEqual([]);
      expect(receiver.received(siblingPath)).toEqual([]);
      expect(receiver.received(otherPath)).toEqual([]);

      const [audit] = await auditEvents(ws, 'webhook_endpoint.test_requested');
      expect(audit).toMatchObject({ resource_id: hook.id, outcome: 'accepted', actor: { type: 'api_key', id: ws.keyId }, metadata: { event_id: eventId } });
    });

    test('409 webhook_disabled for a disabled endpoint, recorded as rejected', async () => {
      const ws = await workspace();
      const hook = await endpoint(ws, uniquePath('test-disabled'));
      await patch(ws, hook.id, { enabled: false });
      expect(await errorCode(await sendTest(ws, hook.id), 409)).toBe('webhook_disabled');
      const [denied] = await auditEvents(ws, 'request.denied');
      expect(denied).toMatchObject({ outcome: 'rejected', resource_id: 'webhooks.test', metadata: { status: 409, reason: 'webhook_disabled' } });
    });
  });

  describe('POST /v2/webhooks/{id}/deliveries/{delivery_id}/retry', () => {
    test('a delivery waiting for its next retry: one manual attempt now; if it fails, the scheduled retry keeps its time', async () => {
      const ws = await workspace();
      const path = uniquePath('retry-waiting');
      // 503 with a Retry-After of an hour: the schedule's next attempt is an hour away.
      let answer: () => Response = () => new Response('busy', { status: 503, headers: { 'retry-after': '3600' } });
      receiver.respond(path, () => answer());
      const hook = await endpoint(ws, path);
      const eventId = await emit(ws);
      const waiting = await delivery(ws, hook.id, eventId, (found) => found.status === 'pending' && found.attempt_count === 1);
      expect(Date.parse(waiting.next_attempt_at!)).toBeGreaterThan(Date.now() + 3_000_000);

      answer = () => new Response('still down', { status: 500 });
      const response = await retry(ws, hook.id, waiting.id);
      expect(response.status).toBe(202);
      expect(await response.json()).toEqual({ delivery_id: waiting.id, event_id: eventId, status: 'pending' });
      const failedAgain = await delivery(ws, hook.id, eventId, (found) => found.attempt_count === 2 && found.status === 'pending');
      expect(failedAgain.next_attempt_at).toBe(waiting.next_attempt_at);
      expect(failedAgain.attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.response_status, attempt.manual])).toEqual([
        [1, 'failed', 503, false],
        [2, 'failed', 500, true],
      ]);
      expect(receiver.received(path)).toHaveLength(2);

      answer = () => new Response('ok');
      expect((await retry(ws, hook.id, waiting.id)).status).toBe(202);
      const succeeded = await delivery(ws, hook.id, eventId, (found) => found.status === 'succeeded');
      expect(succeeded.attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.manual])).toEqual([
        [1, 'failed', false],
        [2, 'failed', true],
        [3, 'succeeded', true],
      ]);
      expect(succeeded.next_attempt_at).toBeNull();
      // Same webhook-id every time, so the receiver can drop duplicates.
      expect(new Set(receiver.received(path).map((request) => request.headers['webhook-id']))).toEqual(new Set([eventId]));

      // Succeeded: 409, recorded as rejected.
      expect(await errorCode(await retry(ws, hook.id, waiting.id), 409)).toBe('delivery_succeeded');
      const denied = (await auditEvents(ws, 'request.denied')).find((event) => event.resource_id === 'webhooks.deliveries.retry');
      expect(denied).toMatchObject({ outcome: 'rejected', metadata: { status: 409, reason: 'delivery_succeeded', delivery_id: waiting.id } });
      const requested = await auditEvents(ws, 'webhook_delivery.retry_requested');
      expect(requested).toHaveLength(2);
      expect(requested[0]).toMatchObject({
        resource_type: 'webhook_delivery',
        resource_id: waiting.id,
        outcome: 'accepted',
        actor: { type: 'api_key', id: ws.keyId },
        metadata: { endpoint_id: hook.id, event_id: eventId },
      });
    });

    test('an exhausted (failed) delivery: one more attempt; if it fails it stays failed, if it succeeds it succeeds', async () => {
      const ws = await workspace();
      const path = uniquePath('retry-exhausted');
      let status = 500;
      receiver.respond(path, () => new Response('x', { status }));
      const hook = await endpoint(ws, path);
      const eventId = await emit(ws);
      const failed = await delivery(ws, hook.id, eventId, (found) => found.status === 'failed');
      expect(failed.attempt_count).toBe(RETRY_DELAYS_MS.length);

      expect((await retry(ws, hook.id, failed.id)).status).toBe(202);
      const stillFailed = await delivery(ws, hook.id, eventId, (found) => found.status === 'failed' && found.attempt_count === 4);
      expect(stillFailed).toMatchObject({ next_attempt_at: null, settled_at: expect.any(String) });
      expect(stillFailed.attempts.at(-1)).toMatchObject({ attempt: 4, status: 'failed', manual: true, next_attempt_at: null });

      status = 200;
      expect((await retry(ws, hook.id, failed.id)).status).toBe(202);
      const succeeded = await delivery(ws, hook.id, eventId, (found) => found.status === 'succeeded');
      expect(succeeded.attempts.at(-1)).toMatchObject({ attempt: 5, status: 'succeeded', manual: true });
      expect(receiver.received(path)).toHaveLength(5);
    });

    test('404 for an unknown delivery, another endpoint’s delivery or another workspace; 409 for cancelled or disabled; 403; 400 for malformed ids', async () => {
      const ws = await workspace();
      const path = uniquePath('retry-errors');
      receiver.respond(path, () => new Response('x', { status: 503, headers: { 'retry-after': '3600' } }));
      const hook = await endpoint(ws, path);
      const sibling = await endpoint(ws, uniquePath('retry-sibling'), ['trade_intent.created']);
      const eventId = await emit(ws);
      const waiting = await delivery(ws, hook.id, eventId, (found) => found.status === 'pending' && found.attempt_count === 1);

      expect(await errorCode(await retry(ws, hook.id, crypto.randomUUID()), 404)).toBe('not_found');
      expect(await errorCode(await retry(ws, sibling.id, waiting.id), 404)).toBe('not_found');
      const other = await workspace();
      expect(await errorCode(await retry(other, hook.id, waiting.id), 404)).toBe('not_found');
      const reader = await workspace(t, ['webhooks:read']);
      expect(await errorCode(await retry(reader, hook.id, waiting.id), 403)).toBe('insufficient_scope');
      for (const id of MALFORMED_IDS) {
        expect(await errorCode(await call(t, 'POST', `/v2/webhooks/${hook.id}/deliveries/${id}/retry`, ws), 400)).toBe('invalid_request');
        expect(await errorCode(await call(t, 'POST', `/v2/webhooks/${id}/deliveries/${waiting.id}/retry`, ws), 400)).toBe('invalid_request');
      }

      // Disabled: 409 webhook_disabled; disabling cancelled it, so once enabled again it is not retryable.
      await patch(ws, hook.id, { enabled: false });
      expect(await errorCode(await retry(ws, hook.id, waiting.id), 409)).toBe('webhook_disabled');
      await patch(ws, hook.id, { enabled: true });
      expect(await errorCode(await retry(ws, hook.id, waiting.id), 409)).toBe('delivery_not_retryable');
      // Deleted: the endpoint is gone, and so are its deliveries as far as the API is concerned.
      expect((await call(t, 'DELETE', `/v2/webhooks/${hook.id}`, ws)).status).toBe(204);
      expect(await errorCode(await retry(ws, hook.id, waiting.id), 404)).toBe('not_found');
      expect(receiver.received(path)).toHaveLength(1);
    });
  });

  describe('PATCH while deliveries are pending', () => {
    test('a new url takes the deliveries not yet made; 404 for another workspace or a deleted endpoint; 403 without webhooks:write', async () => {
      const ws = await workspace();
      const oldPath = uniquePath('moved-from');
      const newPath = uniquePath('moved-to');
      receiver.respond(oldPath, () => new Response('x', { status: 503, headers: { 'retry-after': '3600' } }));
      const hook = await endpoint(ws, oldPath);
      const eventId = await emit(ws);
      const waiting = await delivery(ws, hook.id, eventId, (found) => found.status === 'pending' && found.attempt_count === 1);
      expect((await patch(ws, hook.id, { url: receiver.url(newPath) })).status).toBe(200);
      expect((await retry(ws, hook.id, waiting.id)).status).toBe(202);
      const [request] = await received(newPath, 1);
      expect(request!.headers['webhook-id']).toBe(eventId);
      await delivery(ws, hook.id, eventId, (found) => found.status === 'succeeded');

      const other = await workspace();
      expect(await errorCode(await patch(other, hook.id, { description: 'mine now' }), 404)).toBe('not_found');
      const reader = await workspace(t, ['webhooks:read']);
      expect(await errorCode(await patch(reader, hook.id, { description: 'mine now' }), 403)).toBe('insufficient_scope');
      expect(await errorCode(await call(t, 'PATCH', `/v2/webhooks/${hook.id}`, null, { description: 'x' }), 401)).toBe('unauthorized');
      for (const id of MALFORMED_IDS) expect(await errorCode(await patch(ws, id, { description: 'x' }), 400)).toBe('invalid_request');
      expect((await call(t, 'DELETE', `/v2/webhooks/${hook.id}`, ws)).status).toBe(204);
      expect(await errorCode(await patch(ws, hook.id, { description: 'x' }), 404)).toBe('not_found');
      expect(await errorCode(await rotate(ws, hook.id), 404)).toBe('not_found');
      expect(await errorCode(await sendTest(ws, hook.id), 404)).toBe('not_found');
    });
  });
});

describe('npm run admin -- rewrap-webhook-secrets after a rotation', () => {
  test('rewraps the previous secret too, so both signatures still verify under the new key alone', async () => {
    // Its own database: the command rewraps every endpoint there is.
    const scratch = await scratchTestApp({
      tag: 'webhooks_rotate_rewrap',
      config: { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    });
    try {
      const ws = await workspaceWithKey(scratch, { scopes: ['webhooks:write'] });
      const hook = await createWebhook(scratch, ws.key, { url: 'https://93.184.215.14/rewrap', event_types: ['render.completed'] });
      const rotated = (await (await scratch.request(`/v2/webhooks/${hook.id}/rotate-secret`, { method: 'POST', headers: ws.keyHeaders })).json()) as {
        secret: string;
      };
      const child = Bun.spawn(['bun', join(import.meta.dir, '..', '..', 'scripts', 'admin.ts'), 'rewrap-webhook-secrets'], {
        env: {
          ...process.env,
          LOG_LEVEL: 'silent',
          DATABASE_URL: scratch.deps.config.DATABASE_URL,
          WEBHOOK_SECRET_KEY: WEBHOOK_KEY_B,
          WEBHOOK_SECRET_KEYS_PREVIOUS: WEBHOOK_KEY_A,
        },
        stdout: 'pipe',
        stderr: 'pipe',
      });
      const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
      expect(code).toBe(0);
      const keyB = Buffer.from(WEBHOOK_KEY_B, 'base64');
      expect(JSON.parse(stdout)).toEqual({ current_key_id: secretKeyId(keyB), rewrapped: 1, unreadable: [], steam_tokens: { rewrapped: 0, unreadable: [] } });
      expect(stdout + stderr).not.toContain(rotated.secret.slice(6));
      expect(stdout + stderr).not.toContain(hook.secret.slice(6));
      const [row] = await scratch.deps.sql<
        { secret_ciphertext: Buffer; secret_key_id: string; previous_secret_ciphertext: Buffer; previous_secret_key_id: string }[]
      >`
        select secret_ciphertext, secret_key_id, previous_secret_ciphertext, previous_secret_key_id from webhook_endpoints where id = ${hook.id}`;
      const onlyB = new SecretKeyring(keyB);
      expect(row!.previous_secret_key_id).toBe(secretKeyId(keyB));
      expect(onlyB.open(hook.id, row!.secret_ciphertext, row!.secret_key_id)).toBe(rotated.secret);
      expect(onlyB.open(hook.id, row!.previous_secret_ciphertext, row!.previous_secret_key_id)).toBe(hook.secret);
    } finally {
      await scratch.close();
    }
  }, 60_000);
});
