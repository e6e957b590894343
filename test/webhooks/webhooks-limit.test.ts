import { afterAll, describe, expect, test } from 'bun:test';
import type { AuditEvent } from '../../shared/audit/events.ts';
import { MAX_ENDPOINTS_PER_WORKSPACE } from '../../shared/webhooks/endpoints.ts';
import { createTestApp, errorOf, workspaceWithKey } from '../helpers.ts';
import { type CreatedWebhook, createWebhook, postWebhook, retireEndpoints, WEBHOOK_KEY_A } from './webhooks-fixtures.ts';

/**
 * docs/design.md §8: at most 20 endpoints per workspace, then 409 `webhook_limit_reached`. Endpoints point at
 * a public address nobody dials and subscribe to workspace events only; they are deleted afterwards.
 */
const t = createTestApp({ config: { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'false' } });
const workspaces: string[] = [];
afterAll(async () => {
  await retireEndpoints(t.deps.sql, workspaces);
  await t.close();
});

const PUBLIC_URL = 'https://93.184.215.14/hooks/limit';
const body = (index: number) => ({ url: `${PUBLIC_URL}/${index}`, event_types: ['render.completed'] });

async function workspace() {
  const ws = await workspaceWithKey(t, { scopes: ['webhooks:read', 'webhooks:write', 'audit:read'] });
  workspaces.push(ws.workspace.id);
  return ws;
}

async function fill(key: string, count: number): Promise<CreatedWebhook[]> {
  const created: CreatedWebhook[] = [];
  for (let index = 0; index < count; index += 1) created.push(await createWebhook(t, key, body(index)));
  return created;
}

async function liveCount(workspaceId: string): Promise<number> {
  const [row] = await t.deps.sql<
    { count: number }[]
  >`select count(*)::int as count from webhook_endpoints where workspace_id = ${workspaceId} and deleted_at is null`;
  return row!.count;
}

describe('the endpoint limit', () => {
  test('the 21st create is 409 webhook_limit_reached naming the limit, recorded as rejected; a deleted endpoint frees its place', async () => {
    expect(MAX_ENDPOINTS_PER_WORKSPACE).toBe(20);
    const ws = await workspace();
    const created = await fill(ws.key, 20);

    const refused = await postWebhook(t, ws.key, body(20));
    expect(refused.status).toBe(409);
    const error = await errorOf(refused);
    expect(error.code).toBe('webhook_limit_reached');
    expect(error.message).toContain('20');
    expect(error.request_id).toBe(refused.headers.get('x-request-id')!);
    expect(await liveCount(ws.workspace.id)).toBe(20);

    const events = (await (await t.request('/v2/audit/events?event_type=request.denied', { headers: ws.keyHeaders })).json()) as { data: AuditEvent[] };
    expect(events.data.find((event) => event.request_id === refused.headers.get('x-request-id'))).toMatchObject({
      resource_type: 'operation',
      resource_id: 'webhooks.create',
      outcome: 'rejected',
      metadata: { status: 409, reason: 'webhook_limit_reached', limit: 20 },
    });
    // No endpoint was created, so no webhook_endpoint.created beyond the twenty.
    const createdEvents = (await (await t.request('/v2/audit/events?event_type=webhook_endpoint.created&limit=100', { headers: ws.keyHeaders })).json()) as {
      data: AuditEvent[];
    };
    expect(createdEvents.data).toHaveLength(20);

    // Deleted endpoints do not count.
    expect((await t.request(`/v2/webhooks/${created[0]!.id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);
    expect((await postWebhook(t, ws.key, body(21))).status).toBe(201);
    expect((await postWebhook(t, ws.key, body(22))).status).toBe(409);
    expect(await liveCount(ws.workspace.id)).toBe(20);
  }, 60_000);

  test('20 concurrent creates on a workspace with 19 endpoints create exactly one', async () => {
    const ws = await workspace();
    await fill(ws.key, 19);
    const responses = await Promise.all(Array.from({ length: 20 }, (_, index) => postWebhook(t, ws.key, body(100 + index))));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.filter((status) => status === 409)).toHaveLength(19);
    for (const response of responses.filter((candidate) => candidate.status === 409)) expect((await errorOf(response)).code).toBe('webhook_limit_reached');
    expect(await liveCount(ws.workspace.id)).toBe(20);
  }, 60_000);

  test('the limit is per workspace: another workspace creates freely', async () => {
    const full = await workspace();
    await fill(full.key, 20);
    const other = await workspace();
    expect((await postWebhook(t, other.key, body(0))).status).toBe(201);
    expect((await postWebhook(t, full.key, body(20))).status).toBe(409);
  }, 60_000);
});
