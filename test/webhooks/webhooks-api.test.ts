import { afterAll, describe, expect, test } from 'bun:test';
import type { AuditEvent } from '../../shared/audit/events.ts';
import { EVENT_TYPES } from '../../shared/events/outbox.ts';
import type { Scope } from '../../shared/http/scopes.ts';
import { sha256Hex } from '../../shared/util/crypto.ts';
import { SecretKeyring, secretKeyId } from '../../shared/webhooks/secrets.ts';
import { createTestApp, errorOf, type TestApp, workspaceWithKey } from '../helpers.ts';
import { type CreatedWebhook, createWebhook, postWebhook, retireEndpoints, WEBHOOK_KEY_A } from './webhooks-fixtures.ts';

/**
 * POST/GET/DELETE /v2/webhooks and GET /v2/webhooks/{id}/deliveries through the real plugins, with
 * the SSRF guard on (no private-target allowance) unless a test says otherwise. Endpoints here point
 * at public addresses nobody dials: they subscribe to workspace events only (never price.updated),
 * and are deleted afterwards, so no suite's worker ever tries to reach them.
 */
const t = createTestApp({ config: { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } });
const keyless = createTestApp({ config: { WEBHOOK_SECRET_KEY: '', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } });
const workspaces: string[] = [];
afterAll(async () => {
  await retireEndpoints(t.deps.sql, workspaces);
  await Promise.all([t.close(), keyless.close()]);
});

// A public address (the SSRF guard lets it through without DNS); nothing here ever delivers to it.
const PUBLIC_URL = 'https://93.184.215.14/hooks/cs2';
const body = (extra: Record<string, unknown> = {}) => ({ url: PUBLIC_URL, event_types: ['render.completed'], ...extra });

async function workspace(app: TestApp = t, scopes?: Scope[]) {
  const ws = await workspaceWithKey(app, scopes ? { scopes } : {});
  workspaces.push(ws.workspace.id);
  return ws;
}

const get = (path: string, apiKey?: string, app: TestApp = t) => app.request(path, { headers: apiKey ? { 'x-api-key': apiKey } : {} });

describe('POST /v2/webhooks', () => {
  test('201 returns the endpoint and a whsec_ secret of 32 random bytes, stored only encrypted, with an audit event', async () => {
    const ws = await workspace();
    const response = await postWebhook(t, ws.key, {
      url: PUBLIC_URL,
      event_types: ['trade_intent.created', 'render.completed', 'render.completed'],
      description: ' Render bot ',
    });
    expect(response.status).toBe(201);
    const created = (await response.json()) as CreatedWebhook & Record<string, unknown>;
    expect(created).toMatchObject({
      url: PUBLIC_URL,
      description: 'Render bot',
      // Each type once, in the order of the published list.
      event_types: ['render.completed', 'trade_intent.created'],
      status: 'enabled',
      disabled_reason: null,
      disabled_at: null,
    });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(created.secret.slice('whsec_'.length), 'base64')).toHaveLength(32);

    const [row] = await t.deps.sql<{ secret_ciphertext: Buffer; secret_key_id: string }[]>`
      select secret_ciphertext, secret_key_id from webhook_endpoints where id = ${created.id}`;
    expect(row!.secret_key_id).toBe(secretKeyId(Buffer.from(WEBHOOK_KEY_A, 'base64')));
    expect(row!.secret_ciphertext.includes(Buffer.from(created.secret))).toBe(false);
    expect(row!.secret_ciphertext.includes(Buffer.from(created.secret.slice(6), 'base64'))).toBe(false);
    expect(new SecretKeyring(Buffer.from(WEBHOOK_KEY_A, 'base64')).open(created.id, row!.secret_ciphertext, row!.secret_key_id)).toBe(created.secret);

    const events = await get('/v2/audit/events?event_type=webhook_endpoint.created', ws.key);
    const [event] = ((await events.json()) as { data: AuditEvent[] }).data;
    expect(event).toMatchObject({
      resource_type: 'webhook_endpoint',
      resource_id: created.id,
      outcome: 'succeeded',
      actor: { type: 'api_key', id: ws.keyId },
      request_id: response.headers.get('x-request-id'),
      metadata: { host: '93.184.215.14', event_types: ['render.completed', 'trade_intent.created'] },
    });
    expect(JSON.stringify(event)).not.toContain(created.secret.slice(6));
  });

  test('a replay returns the same endpoint and the same secret with 200, and the stored replay holds no secret in clear', async () => {
    const ws = await workspace();
    const idempotencyKey = `hook-${crypto.randomUUID()}`;
    const first = await postWebhook(t, ws.key, body(), idempotencyKey);
    expect(first.status).toBe(201);
    const created = (await first.json()) as CreatedWebhook;

    const replay = await postWebhook(t, ws.key, body(), idempotencyKey);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(created);

    const list = (await (await get('/v2/webhooks', ws.key)).json()) as { data: { id: string }[] };
    expect(list.data.map((endpoint) => endpoint.id)).toEqual([created.id]);
    // No second secret was minted: the endpoint's stored secret is the one both responses carry.
    const [row] = await t.deps.sql<
      { secret_ciphertext: Buffer; secret_key_id: string }[]
    >`select secret_ciphertext, secret_key_id from webhook_endpoints where id = ${created.id}`;
    expect(new SecretKeyring(Buffer.from(WEBHOOK_KEY_A, 'base64')).open(created.id, row!.secret_ciphertext, row!.secret_key_id)).toBe(created.secret);
    // The idempotency record keeps the response sealed under a key derived from the raw Idempotency-Key.
    const [record] = await t.deps.sql<{ response_sealed: Buffer }[]>`
      select response_sealed from idempotency_records where workspace_id = ${ws.workspace.id} and key_digest = ${sha256Hex(idempotencyKey)}`;
    expect(record!.response_sealed.length).toBeGreaterThan(0);
    expect(record!.response_sealed.includes(Buffer.from(created.secret))).toBe(false);
    expect(record!.response_sealed.includes(Buffer.from(created.secret.slice(6), 'base64'))).toBe(false);
    expect(record!.response_sealed.includes(Buffer.from(created.id))).toBe(false);
  });

  test('409 when the Idempotency-Key is reused with another body; nothing is created', async () => {
    const ws = await workspace();
    const idempotencyKey = `hook-${crypto.randomUUID()}`;
    expect((await postWebhook(t, ws.key, body(), idempotencyKey)).status).toBe(201);
    const reused = await postWebhook(t, ws.key, body({ description: 'other' }), idempotencyKey);
    expect(reused.status).toBe(409);
    expect((await errorOf(reused)).code).toBe('idempotency_key_reused');
    expect(((await (await get('/v2/webhooks', ws.key)).json()) as { data: unknown[] }).data).toHaveLength(1);
  });

  test('400 without an Idempotency-Key', async () => {
    const ws = await workspace();
    const response = await postWebhook(t, ws.key, body(), null);
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('idempotency_key_required');
  });

  test('400 for an unknown event type, listing the known ones', async () => {
    const ws = await workspace();
    const response = await postWebhook(t, ws.key, body({ event_types: ['price.updated', 'price.exploded'] }));
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    const detail = error.details!.find((entry) => entry.field.startsWith('body.event_types'))!;
    expect(detail.message).toContain('"price.exploded"');
    for (const type of EVENT_TYPES) expect(detail.message).toContain(type);
  });

  test.each([
    ['no event types', { url: PUBLIC_URL, event_types: [] }, 'body.event_types'],
    ['no url', { event_types: ['render.completed'] }, 'body.url'],
    ['an unknown field', { ...body(), secret: 'whsec_mine' }, 'body'],
    ['a relative url', body({ url: '/hooks' }), 'body.url'],
    ['an http url', body({ url: 'http://93.184.215.14/hooks' }), 'body.url'],
    ['credentials in the url', body({ url: 'https://user:pass@93.184.215.14/hooks' }), 'body.url'],
    ['a description over 500 characters', body({ description: 'x'.repeat(501) }), 'body.description'],
  ])('400 for %s', async (_name, payload, field) => {
    const ws = await workspace();
    const response = await postWebhook(t, ws.key, payload);
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.details?.some((detail) => detail.field.startsWith(field))).toBe(true);
    expect(((await (await get('/v2/webhooks', ws.key)).json()) as { data: unknown[] }).data).toEqual([]);
  });

  test.each([
    ['loopback IPv4', 'https://127.0.0.1/hook', 'loopback'],
    ['loopback IPv4 spelt as a number', 'https://2130706433/hook', 'loopback'],
    ['loopback IPv6', 'https://[::1]/hook', 'loopback'],
    ['IPv4-mapped loopback', 'https://[::ffff:127.0.0.1]/hook', 'loopback'],
    ['NAT64 of a private address', 'https://[64:ff9b::a00:1]/hook', 'private'],
    ['a name that resolves to loopback', 'https://localhost/hook', 'resolves to'],
    ['cloud metadata', 'https://169.254.169.254/latest/meta-data', 'metadata'],
    ['private 10/8', 'https://10.1.2.3/hook', 'private'],
    ['private 192.168/16', 'https://192.168.0.10:8443/hook', 'private'],
    ['carrier-grade NAT', 'https://100.64.0.1/hook', 'carrier-grade NAT'],
    ['link-local IPv6', 'https://[fe80::1]/hook', 'link-local'],
    ['unique-local IPv6', 'https://[fd12:3456::1]/hook', 'unique-local'],
    ['unspecified', 'https://0.0.0.0/hook', 'unspecified'],
    ['broadcast', 'https://255.255.255.255/hook', 'broadcast'],
    ['multicast', 'https://224.0.0.1/hook', 'multicast'],
    ['benchmarking', 'https://198.18.0.1/hook', 'reserved'],
  ])('400 for a target on %s (SSRF guard)', async (_name, url, reason) => {
    const ws = await workspace();
    const response = await postWebhook(t, ws.key, body({ url }));
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.message).toContain(reason);
    expect(error.details).toEqual([{ field: 'body.url', message: expect.stringContaining(reason) }]);
    expect(((await (await get('/v2/webhooks', ws.key)).json()) as { data: unknown[] }).data).toEqual([]);
  });

  test('WEBHOOK_ALLOW_PRIVATE_TARGETS=true accepts loopback and http (development and tests)', async () => {
    const local = createTestApp({ config: { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
    try {
      const ws = await workspace(local);
      const created = await createWebhook(local, ws.key, { url: 'http://127.0.0.1:9/hook', event_types: ['render.failed'] });
      expect(created.url).toBe('http://127.0.0.1:9/hook');
    } finally {
      await local.close();
    }
  });

  test('401 without a key or with an unknown one', async () => {
    expect((await postWebhook(t, '', body())).status).toBe(401);
    const response = await postWebhook(t, 'cs2_not-a-real-key', body());
    expect(response.status).toBe(401);
    expect((await errorOf(response)).code).toBe('unauthorized');
  });

  test('403 for a key without webhooks:write', async () => {
    const ws = await workspace(t, ['webhooks:read']);
    const response = await postWebhook(t, ws.key, body());
    expect(response.status).toBe(403);
    const error = await errorOf(response);
    expect(error.code).toBe('insufficient_scope');
    expect(error.message).toContain('webhooks:write');
  });

  test('503 secret_storage_unavailable without WEBHOOK_SECRET_KEY, and capabilities say why; reads still work', async () => {
    const ws = await workspace(keyless);
    const response = await postWebhook(keyless, ws.key, body());
    expect(response.status).toBe(503);
    expect((await errorOf(response)).code).toBe('secret_storage_unavailable');
    // The failed request released its Idempotency-Key and created nothing.
    expect(await keyless.deps.sql`select 1 from webhook_endpoints where workspace_id = ${ws.workspace.id}`).toHaveLength(0);
    expect((await get('/v2/webhooks', ws.key, keyless)).status).toBe(200);

    const capabilities = (await (await keyless.request('/v2/meta/capabilities')).json()) as {
      capabilities: { operation: string; status: string; unavailable_because?: string[]; scopes: string[] }[];
    };
    const byId = new Map(capabilities.capabilities.map((capability) => [capability.operation, capability]));
    expect(byId.get('webhooks.create')).toMatchObject({ status: 'unavailable', unavailable_because: ['webhook_secret_key'], scopes: ['webhooks:write'] });
    for (const id of ['webhooks.list', 'webhooks.get', 'webhooks.deliveries.list'])
      expect(byId.get(id)).toMatchObject({ status: 'production', scopes: ['webhooks:read'] });
    expect(byId.get('webhooks.delete')).toMatchObject({ status: 'production', scopes: ['webhooks:write'] });
    const configured = (await (await t.request('/v2/meta/capabilities')).json()) as typeof capabilities;
    expect(configured.capabilities.find((capability) => capability.operation === 'webhooks.create')!.status).toBe('production');
  });
});

describe('GET /v2/webhooks and GET /v2/webhooks/{id}', () => {
  test('lists the workspace’s endpoints newest first in pages with signed cursors, never with a secret', async () => {
    const ws = await workspace();
    const created: CreatedWebhook[] = [];
    for (let index = 0; index < 5; index += 1) created.push(await createWebhook(t, ws.key, body({ description: `hook ${index}` })));
    const other = await workspace();
    await createWebhook(t, other.key, body());

    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const response = await get(`/v2/webhooks?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`, ws.key);
      expect(response.status).toBe(200);
      const text = await response.text();
      for (const hook of created) expect(text).not.toContain(hook.secret.slice(6));
      expect(text).not.toContain('secret');
      const page = JSON.parse(text) as { data: { id: string }[]; next_cursor: string | null };
      seen.push(...page.data.map((endpoint) => endpoint.id));
      cursor = page.next_cursor;
      pages += 1;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual(created.map((hook) => hook.id).reverse());
  });

  test('400 for a tampered cursor, another workspace’s cursor, a bad limit or an unknown parameter', async () => {
    const ws = await workspace();
    const other = await workspace();
    for (let index = 0; index < 2; index += 1) {
      await createWebhook(t, ws.key, body());
      await createWebhook(t, other.key, body());
    }
    const first = (await (await get('/v2/webhooks?limit=1', ws.key)).json()) as { next_cursor: string };
    const tampered = `${first.next_cursor.slice(0, -2)}xx`;
    for (const query of [`cursor=${encodeURIComponent(tampered)}`, 'limit=0', 'limit=101', 'colour=red']) {
      const response = await get(`/v2/webhooks?${query}`, ws.key);
      expect(response.status).toBe(400);
    }
    const foreign = await get(`/v2/webhooks?cursor=${encodeURIComponent(first.next_cursor)}`, other.key);
    expect(foreign.status).toBe(400);
    expect((await errorOf(foreign)).code).toBe('invalid_cursor');
  });

  test('GET one: 200 without a secret; 404 for another workspace’s or an unknown id; 400 for a malformed id', async () => {
    const ws = await workspace();
    const other = await workspace();
    const hook = await createWebhook(t, ws.key, body({ description: 'mine' }));
    const response = await get(`/v2/webhooks/${hook.id}`, ws.key);
    expect(response.status).toBe(200);
    const { secret: _secret, ...withoutSecret } = hook;
    expect(await response.json()).toEqual({ ...withoutSecret, disabled_reason: null, disabled_at: null });

    const foreign = await get(`/v2/webhooks/${hook.id}`, other.key);
    expect(foreign.status).toBe(404);
    expect((await errorOf(foreign)).code).toBe('not_found');
    expect((await get(`/v2/webhooks/${crypto.randomUUID()}`, ws.key)).status).toBe(404);
    const malformed = await get('/v2/webhooks/not-a-uuid', ws.key);
    expect(malformed.status).toBe(400);
    expect((await errorOf(malformed)).details).toEqual([{ field: 'params.webhook_id', message: 'must be a uuid' }]);
  });

  test('401 without a key and 403 without webhooks:read', async () => {
    const ws = await workspace(t, ['prices:read']);
    expect((await get('/v2/webhooks')).status).toBe(401);
    expect((await get(`/v2/webhooks/${crypto.randomUUID()}`)).status).toBe(401);
    for (const path of ['/v2/webhooks', `/v2/webhooks/${crypto.randomUUID()}`, `/v2/webhooks/${crypto.randomUUID()}/deliveries`]) {
      const response = await get(path, ws.key);
      expect(response.status).toBe(403);
      expect((await errorOf(response)).message).toContain('webhooks:read');
    }
  });
});

describe('DELETE /v2/webhooks/{id}', () => {
  test('204 deletes the endpoint and destroys its secret, with an audit event; then it is 404', async () => {
    const ws = await workspace();
    const hook = await createWebhook(t, ws.key, body());
    const response = await t.request(`/v2/webhooks/${hook.id}`, { method: 'DELETE', headers: ws.keyHeaders });
    expect(response.status).toBe(204);
    expect((await get(`/v2/webhooks/${hook.id}`, ws.key)).status).toBe(404);
    expect(((await (await get('/v2/webhooks', ws.key)).json()) as { data: unknown[] }).data).toEqual([]);
    expect((await t.request(`/v2/webhooks/${hook.id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(404);
    const [row] = await t.deps.sql<{ secret_ciphertext: Buffer | null; deleted_at: Date | null }[]>`
      select secret_ciphertext, deleted_at from webhook_endpoints where id = ${hook.id}`;
    expect(row).toMatchObject({ secret_ciphertext: null });
    expect(row!.deleted_at).toBeInstanceOf(Date);

    const events = (await (await get('/v2/audit/events?resource_type=webhook_endpoint', ws.key)).json()) as { data: AuditEvent[] };
    expect(events.data.map((event) => event.event_type)).toEqual(['webhook_endpoint.deleted', 'webhook_endpoint.created']);
    expect(events.data[0]).toMatchObject({ resource_id: hook.id, request_id: response.headers.get('x-request-id'), actor: { type: 'api_key', id: ws.keyId } });
  });

  test('404 for another workspace’s endpoint, which stays; 400 malformed; 401; 403 without webhooks:write', async () => {
    const ws = await workspace();
    const other = await workspace();
    const hook = await createWebhook(t, other.key, body());
    const foreign = await t.request(`/v2/webhooks/${hook.id}`, { method: 'DELETE', headers: ws.keyHeaders });
    expect(foreign.status).toBe(404);
    expect((await get(`/v2/webhooks/${hook.id}`, other.key)).status).toBe(200);
    expect((await t.request('/v2/webhooks/42', { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(400);
    expect((await t.request(`/v2/webhooks/${hook.id}`, { method: 'DELETE' })).status).toBe(401);
    const reader = await workspace(t, ['webhooks:read']);
    const denied = await t.request(`/v2/webhooks/${hook.id}`, { method: 'DELETE', headers: reader.keyHeaders });
    expect(denied.status).toBe(403);
    expect((await errorOf(denied)).message).toContain('webhooks:write');
  });
});

describe('GET /v2/webhooks/{id}/deliveries', () => {
  test('200 with an empty page for a new endpoint; 404 for another workspace; 400 for a bad id, status or cursor; 401', async () => {
    const ws = await workspace();
    const other = await workspace();
    const hook = await createWebhook(t, ws.key, body());
    const response = await get(`/v2/webhooks/${hook.id}/deliveries`, ws.key);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: [], next_cursor: null });
    expect((await get(`/v2/webhooks/${hook.id}/deliveries`, other.key)).status).toBe(404);
    expect((await get('/v2/webhooks/nope/deliveries', ws.key)).status).toBe(400);
    expect((await get(`/v2/webhooks/${hook.id}/deliveries?status=lost`, ws.key)).status).toBe(400);
    expect((await get(`/v2/webhooks/${hook.id}/deliveries?cursor=abc.def`, ws.key)).status).toBe(400);
    expect((await get(`/v2/webhooks/${hook.id}/deliveries`)).status).toBe(401);
  });
});
