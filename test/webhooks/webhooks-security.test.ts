import { afterAll, describe, expect, test } from 'bun:test';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { insertOutboxEvent } from '../../shared/events/outbox.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { attemptDelivery, type DeliveryDeps } from '../../shared/webhooks/deliver.ts';
import { type DeliveryJob, dispatchOutbox } from '../../shared/webhooks/dispatch.ts';
import { nextRetryDelay, parseRetryAfter } from '../../shared/webhooks/retry.ts';
import { generateSigningSecret, SecretKeyring, SecretKeyUnavailableError, secretKeyId } from '../../shared/webhooks/secrets.ts';
import { createWebhookEndpoint } from '../../shared/webhooks/service.ts';
import { signWebhook } from '../../shared/webhooks/signature.ts';
import { type Lookup, refusalReason } from '../../shared/webhooks/targets.ts';
import { createTestApp, scratchTestApp, testConfig, workspaceWithKey } from '../helpers.ts';
import { HOOK_TEST_TLS, retireEndpoints, startReceiver, uniquePath, WEBHOOK_KEY_A, WEBHOOK_KEY_B, WEBHOOK_KEY_C } from './webhooks-fixtures.ts';

/**
 * Signing, secrets at rest and key rotation, and the SSRF guard at delivery time. Attempts are made
 * by calling the delivery function directly (no pool runs in this file), so each test decides the
 * resolver, the private-target allowance and the keys a worker would have.
 */
const keyA = Buffer.from(WEBHOOK_KEY_A, 'base64');
const keyB = Buffer.from(WEBHOOK_KEY_B, 'base64');
const keyC = Buffer.from(WEBHOOK_KEY_C, 'base64');
const t = createTestApp({ config: { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
const receiver = startReceiver();
const tlsReceiver = startReceiver({ tls: HOOK_TEST_TLS });
const workspaces: string[] = [];
afterAll(async () => {
  // No endpoint of this file may outlive it: a later suite's worker would try to deliver to it.
  await retireEndpoints(t.deps.sql, workspaces);
  await receiver.stop();
  await tlsReceiver.stop();
  await t.close();
});

const fixedLookup =
  (...addresses: string[]): Lookup =>
  async () =>
    addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));

function deliveryDeps(overrides: Partial<DeliveryDeps> = {}): DeliveryDeps {
  return {
    sql: t.deps.sql,
    log: createLogger({ level: 'silent', name: 'webhooks-security-test' }),
    keyring: new SecretKeyring(keyA),
    now: () => new Date(),
    retryDelaysMs: [0, 60_000],
    timeoutMs: 2_000,
    allowPrivate: false,
    pageLinks: { signingKey: t.deps.config.SIGNING_KEY!, baseUrl: 'https://api.example.test' },
    ...overrides,
  };
}

async function workspace() {
  const ws = await workspaceWithKey(t, { scopes: ['webhooks:read', 'webhooks:write'] });
  workspaces.push(ws.workspace.id);
  return ws;
}

/** An endpoint created as the API would (the creation-time check uses `lookup` and the allowance). */
async function endpointFor(workspaceId: string, url: string, options: { allowPrivate?: boolean; lookup?: Lookup; keyring?: SecretKeyring } = {}) {
  return createWebhookEndpoint(
    t.deps.sql,
    options.keyring ?? new SecretKeyring(keyA),
    { allowPrivate: options.allowPrivate ?? true, lookup: options.lookup },
    { url, eventTypes: ['render.completed'] },
    { workspaceId, actor: { type: 'system', id: 'test' }, requestId: 'test', now: new Date() },
  );
}

/** Emits one event for the workspace and fans it out; returns the delivery id per endpoint id. */
async function dispatchEvent(workspaceId: string): Promise<{ eventId: string; deliveryOf: (endpointId: string) => Promise<string> }> {
  const eventId = await insertOutboxEvent(t.deps.sql, { type: 'render.completed', workspaceId, payload: { render_id: crypto.randomUUID() }, at: new Date() });
  const jobs: DeliveryJob[] = [];
  // First attempts are enqueued in batches (webhooks.deliver_batch).
  await dispatchOutbox(
    t.deps.sql,
    () => new Date(),
    async (batches) =>
      void jobs.push(...batches.flatMap((batch) => batch.deliveryIds.map((deliveryId) => ({ deliveryId, attemptsMade: 0, delayMs: batch.delayMs })))),
  );
  return {
    eventId,
    deliveryOf: async (endpointId) => {
      const [row] = await t.deps.sql<{ id: string }[]>`select id from webhook_deliveries where endpoint_id = ${endpointId} and event_id = ${eventId}`;
      expect(jobs.some((job) => job.deliveryId === row!.id && job.attemptsMade === 0)).toBe(true);
      return row!.id;
    },
  };
}

async function lastAttempt(deliveryId: string) {
  const [row] = await t.deps.sql<{ outcome: string; response_status: number | null; error: string | null }[]>`
    select outcome, response_status, error from webhook_delivery_attempts where delivery_id = ${deliveryId} order by id desc limit 1`;
  return row!;
}

describe('signatures', () => {
  test('match the standardwebhooks library’s own signing and verify with it', () => {
    const secret = generateSigningSecret();
    const body = JSON.stringify({ id: 'e1', type: 'price.updated', created_at: '2026-01-01T00:00:00.000Z', data: { price: '2.30' } });
    const headers = signWebhook(secret, 'e1', 1_767_225_600, body);
    expect(headers['webhook-signature']).toBe(new Webhook(secret).sign('e1', new Date(1_767_225_600_000), body));
    const now = Math.floor(Date.now() / 1000);
    expect(new Webhook(secret).verify(body, signWebhook(secret, 'e1', now, body))).toEqual(JSON.parse(body));
    expect(() => new Webhook(secret).verify(`${body} `, signWebhook(secret, 'e1', now, body))).toThrow();
  });
});

describe('secrets at rest', () => {
  test('seal under the current key with its id; previous keys still open; unknown keys and other endpoints do not', () => {
    const secret = generateSigningSecret();
    const endpointId = crypto.randomUUID();
    const sealed = new SecretKeyring(keyA).seal(endpointId, secret);
    expect(sealed.keyId).toBe(secretKeyId(keyA));
    expect(sealed.keyId).toMatch(/^k1_[0-9a-f]{16}$/);
    expect(sealed.ciphertext.includes(Buffer.from(secret))).toBe(false);

    const rotated = new SecretKeyring(keyB, [keyA]);
    expect(rotated.currentKeyId).toBe(secretKeyId(keyB));
    expect(rotated.open(endpointId, sealed.ciphertext, sealed.keyId)).toBe(secret);
    expect(() => new SecretKeyring(keyB).open(endpointId, sealed.ciphertext, sealed.keyId)).toThrow(SecretKeyUnavailableError);
    // The endpoint id is bound in: a ciphertext moved to another row does not open.
    expect(() => rotated.open(crypto.randomUUID(), sealed.ciphertext, sealed.keyId)).toThrow();
    expect(new SecretKeyring(null, [keyA]).canSeal).toBe(false);
  });

  test('a worker holding the old key as previous still signs deliveries of secrets sealed under it', async () => {
    const path = uniquePath('rotated');
    const ws = await workspace();
    const endpoint = await endpointFor(ws.workspace.id, receiver.url(path));
    const { eventId, deliveryOf } = await dispatchEvent(ws.workspace.id);
    const result = await attemptDelivery(deliveryDeps({ keyring: new SecretKeyring(keyB, [keyA]), allowPrivate: true }), await deliveryOf(endpoint.id));
    expect(result).toEqual({ kind: 'succeeded', attempt: 1 });
    const [request] = receiver.received(path);
    expect((new Webhook(endpoint.secret).verify(request!.body, request!.headers) as { id: string }).id).toBe(eventId);
  });

  test('a worker without the secret’s key records a failed attempt and retries later, sending nothing', async () => {
    const path = uniquePath('no-key');
    const ws = await workspace();
    const endpoint = await endpointFor(ws.workspace.id, receiver.url(path));
    const { deliveryOf } = await dispatchEvent(ws.workspace.id);
    const deliveryId = await deliveryOf(endpoint.id);
    const result = await attemptDelivery(deliveryDeps({ keyring: new SecretKeyring(keyC), allowPrivate: true }), deliveryId);
    expect(result).toMatchObject({ kind: 'retry', attempt: 1 });
    expect((await lastAttempt(deliveryId)).error).toContain(`key ${secretKeyId(keyA)} is not configured`);
    expect(receiver.received(path)).toEqual([]);
  });
});

async function admin(databaseUrl: string, env: Record<string, string>, ...args: string[]) {
  const child = Bun.spawn(['bun', join(import.meta.dir, '..', '..', 'scripts', 'admin.ts'), ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent', DATABASE_URL: databaseUrl, WEBHOOK_SECRET_KEYS_PREVIOUS: '', ...env },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, stdout, stderr, json: stdout.trim().startsWith('{') ? JSON.parse(stdout) : null };
}

describe('npm run admin -- rewrap-webhook-secrets', () => {
  test('re-encrypts every live secret under the current key, once, and refuses to touch secrets it cannot open', async () => {
    // Its own database: the command rewraps every endpoint there is.
    const scratch = await scratchTestApp({ tag: 'webhooks_rewrap', config: { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_A, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
    try {
      const databaseUrl = scratch.deps.config.DATABASE_URL;
      const ws = await workspaceWithKey(scratch, { scopes: ['webhooks:write', 'audit:read'] });
      const create = async (path: string) => {
        const response = await scratch.request('/v2/webhooks', {
          method: 'POST',
          headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() },
          json: { url: `https://93.184.215.14${path}`, event_types: ['render.completed'] },
        });
        expect(response.status).toBe(201);
        return (await response.json()) as { id: string; secret: string };
      };
      const kept = [await create('/one'), await create('/two')];
      const removed = await create('/three');
      expect((await scratch.request(`/v2/webhooks/${removed.id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);

      const rewrap = await admin(databaseUrl, { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_B, WEBHOOK_SECRET_KEYS_PREVIOUS: WEBHOOK_KEY_A }, 'rewrap-webhook-secrets');
      expect(rewrap.code).toBe(0);
      expect(rewrap.json).toEqual({ current_key_id: secretKeyId(keyB), rewrapped: 2, unreadable: [], steam_tokens: { rewrapped: 0, unreadable: [] } });
      for (const endpoint of kept) expect(rewrap.stdout + rewrap.stderr).not.toContain(endpoint.secret.slice(6));

      const rows = await scratch.deps.sql<{ id: string; secret_ciphertext: Buffer; secret_key_id: string }[]>`
        select id, secret_ciphertext, secret_key_id from webhook_endpoints where deleted_at is null order by id`;
      const onlyB = new SecretKeyring(keyB);
      expect(rows.map((row) => onlyB.open(row.id, row.secret_ciphertext, row.secret_key_id)).sort()).toEqual(kept.map((endpoint) => endpoint.secret).sort());
      const events = await scratch.deps.sql<{ resource_id: string; actor_type: string; metadata: Record<string, string> }[]>`
        select resource_id, actor_type, metadata from audit_events where event_type = 'webhook_endpoint.secret_rewrapped' order by resource_id`;
      expect(events.map((event) => event.resource_id).sort()).toEqual(kept.map((endpoint) => endpoint.id).sort());
      expect(events[0]).toMatchObject({ actor_type: 'admin', metadata: { from_key_id: secretKeyId(keyA), to_key_id: secretKeyId(keyB) } });

      const again = await admin(databaseUrl, { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_B, WEBHOOK_SECRET_KEYS_PREVIOUS: WEBHOOK_KEY_A }, 'rewrap-webhook-secrets');
      expect(again.json).toMatchObject({ rewrapped: 0, unreadable: [] });

      // Rotating to C while forgetting B: nothing can be opened, nothing is changed, exit 1.
      const forgotten = await admin(databaseUrl, { WEBHOOK_SECRET_KEY: WEBHOOK_KEY_C }, 'rewrap-webhook-secrets');
      expect(forgotten.code).toBe(1);
      expect(forgotten.json.rewrapped).toBe(0);
      expect(forgotten.json.unreadable.map((entry: { secret_key_id: string }) => entry.secret_key_id)).toEqual([secretKeyId(keyB), secretKeyId(keyB)]);
      const [unchanged] = await scratch.deps.sql<
        { count: number }[]
      >`select count(*)::int as count from webhook_endpoints where secret_key_id = ${secretKeyId(keyB)}`;
      expect(unchanged!.count).toBe(2);

      const unset = await admin(databaseUrl, { WEBHOOK_SECRET_KEY: '' }, 'rewrap-webhook-secrets');
      expect(unset.code).toBe(1);
      expect(unset.stderr).toContain('WEBHOOK_SECRET_KEY is not configured');
      expect((await admin(databaseUrl, {}, 'help')).stdout).toContain('rewrap-webhook-secrets');
    } finally {
      await scratch.close();
    }
  }, 60_000);
});

describe('SSRF guard at delivery (WEBHOOK_ALLOW_PRIVATE_TARGETS off)', () => {
  test.each([
    ['loopback IPv4', (port: number) => `https://127.0.0.1:${port}/x`, 'loopback'],
    ['loopback IPv6', (port: number) => `https://[::1]:${port}/x`, 'loopback'],
    ['IPv4-mapped loopback', (port: number) => `https://[::ffff:127.0.0.1]:${port}/x`, 'loopback'],
    ['a name resolving to loopback', (port: number) => `https://localhost:${port}/x`, 'resolves to'],
    ['cloud metadata', () => 'https://169.254.169.254/latest/meta-data/', 'metadata'],
    ['private 10/8', () => 'https://10.20.30.40/x', 'private'],
  ])('refuses %s (created while allowed) without sending anything', async (_name, url, reason) => {
    const ws = await workspace();
    const endpoint = await endpointFor(ws.workspace.id, url(receiver.port), { allowPrivate: true });
    const { deliveryOf } = await dispatchEvent(ws.workspace.id);
    const deliveryId = await deliveryOf(endpoint.id);
    const before = receiver.received('/x').length;
    expect(await attemptDelivery(deliveryDeps(), deliveryId)).toMatchObject({ kind: 'retry', attempt: 1 });
    const attempt = await lastAttempt(deliveryId);
    expect(attempt).toMatchObject({ outcome: 'failed', response_status: null });
    expect(attempt.error).toStartWith('refused: ');
    expect(attempt.error).toContain(reason);
    expect(receiver.received('/x').length).toBe(before);
  });

  test('a name that resolved to a public address at creation but to loopback now (DNS rebinding) is refused', async () => {
    const path = uniquePath('rebind');
    const ws = await workspace();
    const url = `https://rebind.test:${receiver.port}${path}`;
    const endpoint = await endpointFor(ws.workspace.id, url, { allowPrivate: false, lookup: fixedLookup('93.184.215.14') });
    for (const answers of [['127.0.0.1'], ['93.184.215.14', '127.0.0.1'], ['2606:4700::1', '::ffff:10.0.0.1']]) {
      const { deliveryOf } = await dispatchEvent(ws.workspace.id);
      const deliveryId = await deliveryOf(endpoint.id);
      await attemptDelivery(deliveryDeps({ lookup: fixedLookup(...answers) }), deliveryId);
      const attempt = await lastAttempt(deliveryId);
      expect(attempt.error).toContain(`rebind.test resolves to ${answers.at(-1)}`);
    }
    expect(receiver.received(path)).toEqual([]);
  });

  test('creation refuses a name when any of its addresses is private', async () => {
    const ws = await workspace();
    await expect(
      endpointFor(ws.workspace.id, 'https://mixed.test/x', { allowPrivate: false, lookup: fixedLookup('93.184.215.14', '192.168.1.1') }),
    ).rejects.toThrow(/mixed\.test resolves to 192\.168\.1\.1, which is a private address/);
    await expect(endpointFor(ws.workspace.id, 'https://nowhere.test/x', { allowPrivate: false, lookup: async () => [] })).rejects.toThrow(/does not resolve/);
  });

  test('the request goes to the checked address with the URL’s host in the Host header', async () => {
    const path = uniquePath('pinned');
    const ws = await workspace();
    const url = `http://hook.test:${receiver.port}${path}`;
    const endpoint = await endpointFor(ws.workspace.id, url, { allowPrivate: true, lookup: fixedLookup('127.0.0.1') });
    const { deliveryOf } = await dispatchEvent(ws.workspace.id);
    expect(await attemptDelivery(deliveryDeps({ allowPrivate: true, lookup: fixedLookup('127.0.0.1') }), await deliveryOf(endpoint.id))).toMatchObject({
      kind: 'succeeded',
    });
    expect(receiver.received(path).map((request) => request.host)).toEqual([`hook.test:${receiver.port}`]);
  });

  test('over TLS the certificate is verified against the URL’s name, not the dialled address', async () => {
    const ws = await workspace();
    const good = await endpointFor(ws.workspace.id, `https://hook.test:${tlsReceiver.port}/tls`, { allowPrivate: true, lookup: fixedLookup('127.0.0.1') });
    const wrongName = await endpointFor(ws.workspace.id, `https://other.test:${tlsReceiver.port}/tls-other`, {
      allowPrivate: true,
      lookup: fixedLookup('127.0.0.1'),
    });
    const { deliveryOf } = await dispatchEvent(ws.workspace.id);
    const deps = deliveryDeps({ allowPrivate: true, lookup: fixedLookup('127.0.0.1'), ca: HOOK_TEST_TLS.cert });
    expect(await attemptDelivery(deps, await deliveryOf(good.id))).toMatchObject({ kind: 'succeeded' });
    expect(tlsReceiver.received('/tls').map((request) => request.host)).toEqual([`hook.test:${tlsReceiver.port}`]);

    const refused = await deliveryOf(wrongName.id);
    expect(await attemptDelivery(deps, refused)).toMatchObject({ kind: 'retry' });
    expect((await lastAttempt(refused)).error).toMatch(/^connection failed/);
    expect(tlsReceiver.received('/tls-other')).toEqual([]);
  });
});

describe('address classification', () => {
  test.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.0.9', 'loopback'],
    ['::1', 'loopback'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.0.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['169.254.1.1', 'link-local'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['fc00::1', 'unique-local'],
    ['fd00:ec2::254', 'metadata'],
    ['100.64.0.1', 'carrier-grade NAT'],
    ['100.127.255.254', 'carrier-grade NAT'],
    ['100.100.100.200', 'metadata'],
    ['168.63.129.16', 'Azure'],
    ['224.0.0.1', 'multicast'],
    ['ff02::1', 'multicast'],
    ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'],
    ['255.255.255.255', 'broadcast'],
    ['198.18.0.1', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['240.0.0.1', 'reserved'],
    ['2001:db8::1', 'reserved'],
    ['::a00:1', 'reserved'],
    ['64:ff9b::a00:1', 'private'],
    ['64:ff9b::7f00:1', 'loopback'],
    ['64:ff9b:1::1', 'NAT64'],
    ['2002:a00:1::1', 'private'],
  ])('%s is refused as %s', (address, reason) => {
    expect(refusalReason(address)).toContain(reason);
  });

  test.each(['93.184.215.14', '8.8.8.8', '100.128.0.1', '2606:4700:4700::1111', '64:ff9b::808:808', '2002:808:808::1'])('%s is public', (address) => {
    expect(refusalReason(address)).toBeNull();
  });
});

describe('retry schedule', () => {
  test('follows the configured delays with ±10 % jitter and stops after the last', () => {
    const delays = testConfig().WEBHOOK_RETRY_DELAYS_MS;
    expect(delays).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(nextRetryDelay(delays, 1, null, () => 0.5)).toBe(5_000);
    expect(nextRetryDelay(delays, 1, null, () => 0)).toBe(4_500);
    expect(nextRetryDelay(delays, 1, null, () => 1)).toBe(5_500);
    expect(nextRetryDelay(delays, 7, null, () => 0.5)).toBe(36_000_000);
    expect(nextRetryDelay(delays, 8, null, () => 0.5)).toBeNull();
    // Retry-After wins when it asks for longer, up to a day.
    expect(nextRetryDelay(delays, 1, 120_000, () => 0.5)).toBe(120_000);
    expect(nextRetryDelay(delays, 1, 1_000, () => 0.5)).toBe(5_000);
    expect(nextRetryDelay(delays, 1, 10 * 86_400_000, () => 0.5)).toBe(86_400_000);
  });

  test('Retry-After is read as seconds or an HTTP date', () => {
    const now = new Date('2026-03-01T12:00:00Z');
    expect(parseRetryAfter('120', now)).toBe(120_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 12:00:30 GMT', now)).toBe(30_000);
    expect(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now)).toBe(0);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(null, now)).toBeNull();
  });
});
