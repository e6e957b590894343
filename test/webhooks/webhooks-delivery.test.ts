import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Webhook } from 'standardwebhooks';
import type { AuditEvent } from '../../shared/audit/events.ts';
import { type EventType, insertOutboxEvent } from '../../shared/events/outbox.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import type { Delivery } from '../../shared/webhooks/deliveries.ts';
import { type RunningPools, startPools } from '../../workers/runtime.ts';
import { webhooksPool } from '../../workers/webhooks/index.ts';
import { createTestApp, eventually, testConfig, workspaceWithKey } from '../helpers.ts';
import {
  type CreatedWebhook,
  createWebhook,
  type ReceivedRequest,
  removeQueueKeys,
  retireEndpoints,
  startReceiver,
  uniquePath,
  WEBHOOK_KEY_A,
} from './webhooks-fixtures.ts';

/**
 * Delivery behaviour against a receiver on loopback, with the real webhooks pool (BullMQ and
 * Postgres) running in this process under its own QUEUE_PREFIX. Retries are shortened to 200 ms
 * (three attempts) and the timeout to one second. Events are workspace events of this suite's own
 * workspaces, so what other suites write to the outbox never reaches these endpoints.
 */
const RETRY_DELAYS_MS = [0, 200, 200];
const TIMEOUT_MS = 1_000;
const queuePrefix = `whdelivery${process.pid}`;
const settings = {
  WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_RETRY_DELAYS_MS: RETRY_DELAYS_MS.join(','),
  WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  QUEUE_PREFIX: queuePrefix,
};
const t = createTestApp({ config: settings });
const receiver = startReceiver();
let pool: RunningPools | undefined;

beforeAll(async () => {
  pool = await startPools([webhooksPool], testConfig(settings), createLogger({ level: 'silent', name: 'webhooks-test' }));
});
const workspaces: string[] = [];
afterAll(async () => {
  await pool?.stop(5_000);
  // No endpoint of this file may outlive it: a later suite's worker would try to deliver to it.
  await retireEndpoints(t.deps.sql, workspaces);
  await receiver.stop();
  await removeQueueKeys(t.deps.config.REDIS_URL, queuePrefix);
  await t.close();
});

type Workspace = Awaited<ReturnType<typeof workspaceWithKey>>;

async function endpoint(path: string, eventTypes: EventType[] = ['render.completed'], ws?: Workspace) {
  const owner = ws ?? (await workspaceWithKey(t, { scopes: ['webhooks:read', 'webhooks:write', 'audit:read'] }));
  workspaces.push(owner.workspace.id);
  const hook = await createWebhook(t, owner.key, { url: receiver.url(path), event_types: eventTypes });
  return { ws: owner, hook };
}

function emit(ws: Workspace, type: EventType = 'render.completed', payload: Record<string, unknown> = { render_id: crypto.randomUUID() }) {
  return insertOutboxEvent(t.deps.sql, { type, workspaceId: ws.workspace.id, payload, at: new Date() });
}

async function deliveries(ws: Workspace, hook: CreatedWebhook, query = ''): Promise<Delivery[]> {
  const response = await t.request(`/v2/webhooks/${hook.id}/deliveries${query}`, { headers: ws.keyHeaders });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: Delivery[] }).data;
}

/** Waits until the endpoint's delivery of `eventId` has settled in `status`. */
function settled(ws: Workspace, hook: CreatedWebhook, eventId: string, status: Delivery['status'], timeoutMs = 15_000): Promise<Delivery> {
  return eventually(async () => {
    const found = (await deliveries(ws, hook)).find((delivery) => delivery.event_id === eventId);
    return found?.status === status ? found : undefined;
  }, timeoutMs);
}

function received(path: string, count: number, timeoutMs = 15_000): Promise<ReceivedRequest[]> {
  return eventually(async () => (receiver.received(path).length >= count ? receiver.received(path) : undefined), timeoutMs);
}

function verify(secret: string, request: ReceivedRequest) {
  return new Webhook(secret).verify(request.body, request.headers) as { id: string; type: string; created_at: string; data: unknown };
}

describe('delivery', () => {
  test('POSTs {id, type, created_at, data} signed per Standard Webhooks, verified by the standardwebhooks library', async () => {
    const path = uniquePath('signed');
    const { ws, hook } = await endpoint(path);
    const payload = { render_id: crypto.randomUUID(), output: { width: 512, height: 384, format: 'png' } };
    const at = new Date();
    const eventId = await insertOutboxEvent(t.deps.sql, { type: 'render.completed', workspaceId: ws.workspace.id, payload, at });

    const [request] = await received(path, 1);
    expect(request!.headers['content-type']).toBe('application/json');
    expect(request!.headers['webhook-id']).toBe(eventId);
    expect(request!.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(Math.abs(Number(request!.headers['webhook-timestamp']) - Date.now() / 1000)).toBeLessThan(30);
    expect(verify(hook.secret, request!)).toEqual({ id: eventId, type: 'render.completed', created_at: at.toISOString(), data: payload });
    // Any other secret fails verification.
    expect(() => new Webhook(`whsec_${Buffer.alloc(32, 1).toString('base64')}`).verify(request!.body, request!.headers)).toThrow();

    const delivery = await settled(ws, hook, eventId, 'succeeded');
    expect(delivery).toMatchObject({ event_type: 'render.completed', attempt_count: 1, next_attempt_at: null, last_response_status: 200, last_error: null });
    expect(delivery.attempts).toEqual([
      {
        attempt: 1,
        status: 'succeeded',
        response_status: 200,
        duration_ms: expect.any(Number),
        error: null,
        started_at: expect.any(String),
        next_attempt_at: null,
        manual: false,
      },
    ]);
    expect(receiver.received(path)).toHaveLength(1);
  });

  test('a workspace’s events reach only its own endpoints subscribed to that type', async () => {
    const mine = uniquePath('mine');
    const otherType = uniquePath('other-type');
    const otherWorkspace = uniquePath('other-workspace');
    const { ws, hook } = await endpoint(mine, ['render.completed']);
    await endpoint(otherType, ['render.failed'], ws);
    const foreign = await endpoint(otherWorkspace, ['render.completed']);
    const eventId = await emit(ws);
    await settled(ws, hook, eventId, 'succeeded');
    // The other workspace's own event proves its endpoint is being served.
    const foreignEvent = await emit(foreign.ws);
    await settled(foreign.ws, foreign.hook, foreignEvent, 'succeeded');
    expect(receiver.received(mine).map((request) => request.headers['webhook-id'])).toEqual([eventId]);
    expect(receiver.received(otherWorkspace).map((request) => request.headers['webhook-id'])).toEqual([foreignEvent]);
    expect(receiver.received(otherType)).toEqual([]);
  });

  test('non-2xx answers are retried on the schedule with the same webhook-id, each attempt recorded', async () => {
    const path = uniquePath('flaky');
    receiver.respond(path, (_request, count) => new Response('boom', { status: count <= 2 ? 500 : 200 }));
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);

    const requests = await received(path, 3);
    expect(requests.map((request) => request.headers['webhook-id'])).toEqual([eventId, eventId, eventId]);
    for (const request of requests) expect(verify(hook.secret, request).id).toBe(eventId);
    // Each wait is the schedule's 200 ms ± 10 % jitter.
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(170);
    expect(requests[2]!.at - requests[1]!.at).toBeGreaterThanOrEqual(170);

    const delivery = await settled(ws, hook, eventId, 'succeeded');
    expect(delivery.attempt_count).toBe(3);
    expect(delivery.attempts.map((attempt) => [attempt.attempt, attempt.status, attempt.response_status, attempt.error])).toEqual([
      [1, 'failed', 500, 'HTTP 500'],
      [2, 'failed', 500, 'HTTP 500'],
      [3, 'succeeded', 200, null],
    ]);
    expect(delivery.attempts[0]!.next_attempt_at).not.toBeNull();
    expect(delivery.attempts[2]!.next_attempt_at).toBeNull();
  });

  test('after the last attempt the delivery is failed and nothing more is sent', async () => {
    const path = uniquePath('down');
    receiver.respond(path, () => new Response('down', { status: 500 }));
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);
    const delivery = await settled(ws, hook, eventId, 'failed');
    expect(delivery.attempt_count).toBe(RETRY_DELAYS_MS.length);
    expect(delivery.attempts.map((attempt) => attempt.status)).toEqual(['failed', 'failed', 'failed']);
    expect(delivery.next_attempt_at).toBeNull();
    expect(delivery.settled_at).not.toBeNull();
    expect(receiver.received(path)).toHaveLength(RETRY_DELAYS_MS.length);
    expect((await deliveries(ws, hook, '?status=failed')).map((entry) => entry.id)).toEqual([delivery.id]);
    expect(await deliveries(ws, hook, '?status=succeeded')).toEqual([]);
  });

  test('410 Gone fails the delivery and disables the endpoint, with an audit event; later events are not delivered', async () => {
    const path = uniquePath('gone');
    receiver.respond(path, () => new Response('gone', { status: 410 }));
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);
    const delivery = await settled(ws, hook, eventId, 'failed');
    expect(delivery.attempts.map((attempt) => [attempt.status, attempt.response_status])).toEqual([['failed', 410]]);

    const endpointNow = (await (await t.request(`/v2/webhooks/${hook.id}`, { headers: ws.keyHeaders })).json()) as {
      status: string;
      disabled_reason: string;
      disabled_at: string;
    };
    expect(endpointNow.status).toBe('disabled');
    expect(endpointNow.disabled_reason).toContain('410');
    expect(endpointNow.disabled_at).not.toBeNull();
    const audit = (await (await t.request('/v2/audit/events?event_type=webhook_endpoint.disabled', { headers: ws.keyHeaders })).json()) as {
      data: AuditEvent[];
    };
    expect(audit.data).toHaveLength(1);
    expect(audit.data[0]).toMatchObject({ resource_id: hook.id, outcome: 'recorded', actor: { type: 'system', id: 'webhooks' } });

    const later = await emit(ws);
    await eventually(async () => {
      const [row] = await t.deps.sql<{ published_at: Date | null }[]>`select published_at from event_outbox where id = ${later}`;
      return row?.published_at ? true : undefined;
    });
    expect((await deliveries(ws, hook)).map((entry) => entry.event_id)).toEqual([eventId]);
    expect(receiver.received(path)).toHaveLength(1);
  });

  test('429 with Retry-After defers the next attempt at least that long', async () => {
    const path = uniquePath('throttled');
    receiver.respond(path, (_request, count) =>
      count === 1 ? new Response('slow down', { status: 429, headers: { 'retry-after': '2' } }) : new Response('ok'),
    );
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);
    const requests = await received(path, 2);
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(1_950);
    const delivery = await settled(ws, hook, eventId, 'succeeded');
    const [first] = delivery.attempts;
    expect(first).toMatchObject({ status: 'failed', response_status: 429 });
    expect(Date.parse(first!.next_attempt_at!) - Date.parse(first!.started_at)).toBeGreaterThanOrEqual(2_000);
  });

  test('503 with an HTTP-date Retry-After is honoured too', async () => {
    const path = uniquePath('maintenance');
    receiver.respond(path, (_request, count) =>
      count === 1 ? new Response('later', { status: 503, headers: { 'retry-after': new Date(Date.now() + 2_000).toUTCString() } }) : new Response('ok'),
    );
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);
    const requests = await received(path, 2);
    // An HTTP date has whole seconds: at least one second of the two remains after rounding down.
    expect(requests[1]!.at - requests[0]!.at).toBeGreaterThanOrEqual(950);
    await settled(ws, hook, eventId, 'succeeded');
  });

  test('a redirect is not followed: the 3xx is a failed attempt and its target never hears from us', async () => {
    const path = uniquePath('moved');
    const elsewhere = uniquePath('elsewhere');
    receiver.respond(path, () => new Response(null, { status: 307, headers: { location: receiver.url(elsewhere) } }));
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);
    const delivery = await settled(ws, hook, eventId, 'failed');
    expect(delivery.attempts.map((attempt) => [attempt.response_status, attempt.error])).toEqual([
      [307, 'HTTP 307: redirects are not followed'],
      [307, 'HTTP 307: redirects are not followed'],
      [307, 'HTTP 307: redirects are not followed'],
    ]);
    expect(receiver.received(elsewhere)).toEqual([]);
  });

  test('an answer slower than the timeout is a failed attempt, retried', async () => {
    const path = uniquePath('slow');
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => (release = resolve));
    receiver.respond(path, async (_request, count) => {
      if (count === 1) await gate;
      return new Response('ok');
    });
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);
    try {
      const delivery = await settled(ws, hook, eventId, 'succeeded');
      expect(delivery.attempts.map((attempt) => [attempt.status, attempt.error])).toEqual([
        ['failed', `timed out after ${TIMEOUT_MS} ms`],
        ['succeeded', null],
      ]);
      expect(delivery.attempts[0]!.duration_ms).toBeGreaterThanOrEqual(TIMEOUT_MS - 50);
    } finally {
      release();
    }
  });

  test('deleting an endpoint cancels its deliveries still waiting for a retry', async () => {
    const path = uniquePath('deleted');
    receiver.respond(path, () => new Response('later', { status: 503, headers: { 'retry-after': '3600' } }));
    const { ws, hook } = await endpoint(path);
    const eventId = await emit(ws);
    await eventually(async () => {
      const found = (await deliveries(ws, hook)).find((delivery) => delivery.event_id === eventId);
      return found?.status === 'pending' && found.attempt_count === 1 ? found : undefined;
    });
    expect((await t.request(`/v2/webhooks/${hook.id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);
    const [row] = await t.deps.sql<{ state: string; next_attempt_at: Date | null }[]>`
      select state, next_attempt_at from webhook_deliveries where endpoint_id = ${hook.id}`;
    expect(row).toEqual({ state: 'cancelled', next_attempt_at: null });
  });

  test('deliveries page newest first with cursors bound to the status filter', async () => {
    const path = uniquePath('paged');
    const { ws, hook } = await endpoint(path);
    const events: string[] = [];
    for (let index = 0; index < 3; index += 1) {
      events.push(await emit(ws));
      await settled(ws, hook, events[index]!, 'succeeded');
    }
    const first = await t.request(`/v2/webhooks/${hook.id}/deliveries?limit=2`, { headers: ws.keyHeaders });
    const page = (await first.json()) as { data: Delivery[]; next_cursor: string };
    expect(page.data.map((delivery) => delivery.event_id)).toEqual([events[2]!, events[1]!]);
    const second = (await (
      await t.request(`/v2/webhooks/${hook.id}/deliveries?limit=2&cursor=${encodeURIComponent(page.next_cursor)}`, { headers: ws.keyHeaders })
    ).json()) as {
      data: Delivery[];
      next_cursor: string | null;
    };
    expect(second.data.map((delivery) => delivery.event_id)).toEqual([events[0]!]);
    expect(second.next_cursor).toBeNull();
    const refiltered = await t.request(`/v2/webhooks/${hook.id}/deliveries?status=succeeded&cursor=${encodeURIComponent(page.next_cursor)}`, {
      headers: ws.keyHeaders,
    });
    expect(refiltered.status).toBe(400);
  });
});
