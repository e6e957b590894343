import { Redis } from 'ioredis';
import type { Queryable } from '../../shared/platform/db.ts';
import type { TestApp } from '../helpers.ts';

/**
 * Shared by the webhook suites: a receiver on loopback that records every request and answers as
 * each test tells it (per path), fixed secret keys, and a TLS certificate for `hook.test`.
 */

export const WEBHOOK_KEY_A = Buffer.alloc(32, 0xa1).toString('base64');
export const WEBHOOK_KEY_B = Buffer.alloc(32, 0xb2).toString('base64');
export const WEBHOOK_KEY_C = Buffer.alloc(32, 0xc3).toString('base64');

export type ReceivedRequest = { path: string; host: string | null; headers: Record<string, string>; body: string; at: number };
export type Responder = (request: ReceivedRequest, count: number) => Response | Promise<Response>;

export type Receiver = {
  /** http://127.0.0.1:<port><path> */
  url: (path: string) => string;
  port: number;
  /** Requests received on a path, oldest first. */
  received: (path: string) => ReceivedRequest[];
  /** Every request received, on any path. */
  all: () => ReceivedRequest[];
  /** How the receiver answers on a path (default 200); `count` is the request's number on that path, from 1. */
  respond: (path: string, responder: Responder) => void;
  stop: () => Promise<void>;
};

export function startReceiver(options: { tls?: { cert: string; key: string } } = {}): Receiver {
  const requests = new Map<string, ReceivedRequest[]>();
  const responders = new Map<string, Responder>();
  const server = Bun.serve({
    port: 0,
    hostname: '127.0.0.1',
    ...(options.tls ? { tls: options.tls } : {}),
    async fetch(request) {
      const path = new URL(request.url).pathname;
      const received: ReceivedRequest = {
        path,
        host: request.headers.get('host'),
        headers: Object.fromEntries(request.headers.entries()),
        body: await request.text(),
        at: Date.now(),
      };
      const list = requests.get(path) ?? [];
      list.push(received);
      requests.set(path, list);
      const responder = responders.get(path);
      return responder ? responder(received, list.length) : new Response('ok');
    },
  });
  const scheme = options.tls ? 'https' : 'http';
  return {
    url: (path) => `${scheme}://127.0.0.1:${server.port}${path}`,
    port: server.port!,
    received: (path) => requests.get(path) ?? [],
    all: () => [...requests.values()].flat(),
    respond: (path, responder) => responders.set(path, responder),
    stop: async () => {
      await server.stop(true);
    },
  };
}

let pathCounter = 0;
/** A receiver path no other test uses. */
export function uniquePath(tag: string): string {
  pathCounter += 1;
  return `/${tag}-${pathCounter}-${crypto.randomUUID().slice(0, 8)}`;
}

export type CreatedWebhook = {
  id: string;
  url: string;
  description: string | null;
  event_types: string[];
  status: string;
  created_at: string;
  secret: string;
};

export async function postWebhook(t: TestApp, apiKey: string, body: unknown, idempotencyKey: string | null = crypto.randomUUID()) {
  return t.request('/v2/webhooks', {
    method: 'POST',
    headers: { 'x-api-key': apiKey, ...(idempotencyKey === null ? {} : { 'idempotency-key': idempotencyKey }) },
    json: body,
  });
}

/** Creates an endpoint through the API and returns it with its one-time secret. */
export async function createWebhook(t: TestApp, apiKey: string, body: { url: string; event_types: string[]; description?: string }): Promise<CreatedWebhook> {
  const response = await postWebhook(t, apiKey, body);
  if (response.status !== 201) throw new Error(`webhook creation failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as CreatedWebhook;
}

/**
 * Deletes the live endpoints of these workspaces (as DELETE /v2/webhooks/{id} leaves them). No
 * endpoint of a suite may outlive it: a later suite's webhooks worker would fan its events out to
 * a receiver that is gone, and queue its own deliveries behind those.
 */
export async function retireEndpoints(db: Queryable, workspaceIds: readonly string[]): Promise<void> {
  if (workspaceIds.length === 0) return;
  await db`update webhook_endpoints set deleted_at = now(), secret_ciphertext = null, secret_key_id = null
           where workspace_id in ${db(workspaceIds as string[])} and deleted_at is null`;
}

/**
 * A live endpoint row subscribed to `eventTypes`, written straight to Postgres (no WEBHOOK_SECRET_KEY
 * needed): for suites that need a subscriber to exist, not deliveries that verify. Retire it after.
 */
export async function subscribedEndpoint(db: Queryable, workspaceId: string, eventTypes: string[], createdAt = new Date()): Promise<string> {
  const [row] = await db<{ id: string }[]>`
    insert into webhook_endpoints (id, workspace_id, url, event_types, secret_ciphertext, secret_key_id, created_at)
    values (gen_random_uuid(), ${workspaceId}, 'https://hook.test/subscriber', ${eventTypes}::text[], '\\x00', 'test', ${createdAt})
    returning id`;
  return row!.id;
}

/** Deletes every Redis key under `<prefix>:` (a suite's own QUEUE_PREFIX). */
export async function removeQueueKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** A self-signed certificate for `hook.test` (valid until 2126), for the TLS receiver: deliveries must verify it against the name. */
export const HOOK_TEST_TLS = {
  cert: `-----BEGIN CERTIFICATE-----
MIIBkzCCATigAwIBAgIUIxUa5ap8p8V7Jr6d1Ka+cv/GrKEwCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJaG9vay50ZXN0MCAXDTI2MTEyMjAyMDcwNFoYDzIxMjYxMDI5
MDIwNzA0WjAUMRIwEAYDVQQDDAlob29rLnRlc3QwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAATdKT6vJn2zeZb2wXLLgfXbWKEFQbjflAoD8mb5tsIouwFcd0hIDfBA
qU9y1kvdhm8J4cu39KZIB4/OPgOl4qUao2YwZDAdBgNVHQ4EFgQUcceEJ/Vu2f2O
pdfhZ3MTcPC9U00wHwYDVR0jBBgwFoAUcceEJ/Vu2f2OpdfhZ3MTcPC9U00wFAYD
VR0RBA0wC4IJaG9vay50ZXN0MAwGA1UdEwEB/wQCMAAwCgYIKoZIzj0EAwIDSQAw
RgIhALfF1gwdT4jxgLgCxrLp3Srz0GMndcYV4Ru1JE3mhDW3AiEAlBxMw0IAHrzc
lLAwYXFWNzX1uOBFOwFn1qbTBKnn6BI=
-----END CERTIFICATE-----`,
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgu2tTAgDrLVCWneAQ
QK6ocblBQ58XVJk6QXqcucKWgC6hRANCAATdKT6vJn2zeZb2wXLLgfXbWKEFQbjf
lAoD8mb5tsIouwFcd0hIDfBAqU9y1kvdhm8J4cu39KZIB4/OPgOl4qUa
-----END PRIVATE KEY-----`,
};
