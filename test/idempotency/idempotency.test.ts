import { afterAll, describe, expect, test } from 'bun:test';
import { type AnyElysia, status } from 'elysia';
import { z } from 'zod';
import type { AppDeps } from '../../api/deps.ts';
import { apiKeyPlugin } from '../../api/plugins/api-key.ts';
import { idempotencyPlugin } from '../../api/plugins/idempotency.ts';
import type { AuditEvent } from '../../shared/audit/events.ts';
import { deleteExpiredIdempotencyRecords, IDEMPOTENCY_RETENTION_MS } from '../../shared/idempotency/records.ts';
import { sha256Hex } from '../../shared/util/crypto.ts';
import { createTestApp, errorOf, eventually, signUp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';

/**
 * A test-only create route behind the real plugins. Each request names a `thing`; per name the
 * handler counts its invocations, can be held at a gate until the test releases it, and can be told
 * to fail its next runs.
 */
type Behaviour = { calls: number; gate: Promise<void> | null; release: () => void; failures: number };
const behaviours = new Map<string, Behaviour>();

function behaviour(name: string): Behaviour {
  let found = behaviours.get(name);
  if (!found) {
    found = { calls: 0, gate: null, release: () => undefined, failures: 0 };
    behaviours.set(name, found);
  }
  return found;
}

function holdAtGate(name: string): () => void {
  const b = behaviour(name);
  b.gate = new Promise<void>((resolve) => {
    b.release = () => {
      b.gate = null;
      resolve();
    };
  });
  return () => b.release();
}

const mountThings = (app: AnyElysia, deps: AppDeps) =>
  app
    .use(idempotencyPlugin(deps))
    .use(apiKeyPlugin(deps))
    .post(
      '/test/things',
      async ({ body, set }) => {
        const b = behaviour(body.name);
        b.calls += 1;
        const call = b.calls;
        if (b.gate) await b.gate;
        if (b.failures > 0) {
          b.failures -= 1;
          throw new Error('the handler failed on purpose');
        }
        set.status = 201;
        return { thing_id: crypto.randomUUID(), name: body.name, call };
      },
      {
        operation: 'me.get',
        idempotent: { operation: 'keys.create', required: true },
        body: z.object({ name: z.string(), colour: z.string().optional() }),
      },
    )
    // Handlers that answer with Elysia's status(code, body) instead of set.status.
    .post(
      '/test/accepted',
      ({ body }) => {
        const b = behaviour(body.name);
        b.calls += 1;
        return status(202, { thing_id: crypto.randomUUID(), name: body.name, call: b.calls });
      },
      { operation: 'me.get', idempotent: { operation: 'keys.create', required: true }, body: z.object({ name: z.string() }) },
    )
    .post(
      '/test/refused',
      ({ body }) => {
        const b = behaviour(body.name);
        b.calls += 1;
        return status(409, { error: { code: 'thing_conflict', message: 'refused on purpose', request_id: 'test' } });
      },
      { operation: 'me.get', idempotent: { operation: 'keys.create', required: true }, body: z.object({ name: z.string() }) },
    ) as unknown as AnyElysia;

const t = createTestApp({ extend: mountThings });
afterAll(() => t.close());

let counter = 0;
const uniqueName = (tag: string) => `${tag}-${Date.now().toString(36)}-${(counter += 1)}`;
const uniqueKey = () => `idem-${crypto.randomUUID()}`;

function postThing(app: TestApp, apiKey: string, idempotencyKey: string | null, body: Record<string, unknown>) {
  return app.request('/test/things', {
    method: 'POST',
    headers: { 'x-api-key': apiKey, ...(idempotencyKey === null ? {} : { 'idempotency-key': idempotencyKey }) },
    json: body,
  });
}

function postKey(auth: Record<string, string>, idempotencyKey: string | null, body: unknown) {
  return t.request('/v1/me/keys', {
    method: 'POST',
    headers: { ...auth, ...(idempotencyKey === null ? {} : { 'idempotency-key': idempotencyKey }) },
    json: body,
  });
}

async function keyIds(auth: Record<string, string>): Promise<string[]> {
  const response = await t.request('/v1/me/keys', { headers: auth });
  expect(response.status).toBe(200);
  return ((await response.json()) as { keys: { id: string }[] }).keys.map((key) => key.id);
}

async function recordCount(workspaceId: string, key: string): Promise<number> {
  const [row] = await t.deps.sql<{ count: number }[]>`
    select count(*)::int as count from idempotency_records where workspace_id = ${workspaceId} and key_digest = ${sha256Hex(key)}`;
  return row!.count;
}

describe('POST /v1/me/keys (Idempotency-Key optional)', () => {
  test('the same key and body replay the original response with 200 and Idempotent-Replayed', async () => {
    const user = await signUp(t);
    const key = uniqueKey();
    const body = { label: 'deploy', scopes: ['prices:read', 'catalog:read'] };

    const first = await postKey(user.auth, key, body);
    expect(first.status).toBe(201);
    expect(first.headers.get('idempotent-replayed')).toBeNull();
    const created = await first.json();

    const again = await postKey(user.auth, key, body);
    expect(again.status).toBe(200);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(await again.json()).toEqual(created);

    // Key order in the body does not make it another request (canonical JSON).
    const reordered = await postKey(user.auth, key, { scopes: ['prices:read', 'catalog:read'], label: 'deploy' });
    expect(reordered.status).toBe(200);
    expect(((await reordered.json()) as { key: string }).key).toBe((created as { key: string }).key);

    expect(await keyIds(user.auth)).toEqual([(created as { id: string }).id]);
  });

  test('the same key with a different body is 409 idempotency_key_reused and creates nothing', async () => {
    const user = await workspaceWithKey(t, { scopes: ['audit:read'] });
    const key = uniqueKey();
    expect((await postKey(user.auth, key, { label: 'one' })).status).toBe(201);

    const reused = await postKey(user.auth, key, { label: 'two' });
    expect(reused.status).toBe(409);
    expect((await errorOf(reused)).code).toBe('idempotency_key_reused');
    const requestId = reused.headers.get('x-request-id');

    // The admin key from the factory, plus the one created above.
    expect(await keyIds(user.auth)).toHaveLength(2);

    // The conflict is recorded as a rejected request.
    const listing = await t.request('/v2/audit/events?event_type=request.denied', { headers: user.keyHeaders });
    const events = ((await listing.json()) as { data: AuditEvent[] }).data;
    expect(events.find((e) => e.request_id === requestId)).toMatchObject({
      outcome: 'rejected',
      resource_id: 'keys.create',
      actor: { type: 'account', id: user.account.id },
      metadata: { status: 409, reason: 'idempotency_key_reused' },
    });
  });

  test('without the header every request creates a new key', async () => {
    const user = await signUp(t);
    const first = await postKey(user.auth, null, { label: 'same' });
    const second = await postKey(user.auth, null, { label: 'same' });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    const a = (await first.json()) as { id: string; key: string };
    const b = (await second.json()) as { id: string; key: string };
    expect(a.id).not.toBe(b.id);
    expect(a.key).not.toBe(b.key);
    expect((await keyIds(user.auth)).sort()).toEqual([a.id, b.id].sort());
  });

  test.each([
    ['300 characters', 'k'.repeat(300)],
    ['256 characters', 'k'.repeat(256)],
    ['a space', 'has space'],
    ['a non-ASCII character', 'clé'],
  ])('an Idempotency-Key of %s is a 400', async (_name, value) => {
    const user = await signUp(t);
    const response = await postKey(user.auth, value, { label: 'x' });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_request');
    expect(await keyIds(user.auth)).toEqual([]);
  });

  test('an Idempotency-Key of 255 visible characters is accepted', async () => {
    const user = await signUp(t);
    const response = await postKey(user.auth, '~'.repeat(255), { label: 'long key' });
    expect(response.status).toBe(201);
  });

  test('the same Idempotency-Key in another workspace creates that workspace its own key', async () => {
    const a = await signUp(t);
    const b = await signUp(t);
    const key = uniqueKey();
    const body = { label: 'shared' };
    const fromA = await postKey(a.auth, key, body);
    const fromB = await postKey(b.auth, key, body);
    expect(fromA.status).toBe(201);
    expect(fromB.status).toBe(201);
    const keyA = (await fromA.json()) as { id: string };
    const keyB = (await fromB.json()) as { id: string };
    expect(keyA.id).not.toBe(keyB.id);
    expect(await keyIds(a.auth)).toEqual([keyA.id]);
    expect(await keyIds(b.auth)).toEqual([keyB.id]);
  });

  test('50 concurrent identical requests create exactly one key', async () => {
    const user = await signUp(t);
    const key = uniqueKey();
    const body = { label: 'raced', scopes: ['usage:read'] };
    const responses = await Promise.all(Array.from({ length: 50 }, () => postKey(user.auth, key, body)));

    const outcomes = await Promise.all(
      responses.map(async (response) => ({
        status: response.status,
        replayed: response.headers.get('idempotent-replayed'),
        body: (await response.json()) as { id?: string; error?: { code: string } },
      })),
    );
    const created = outcomes.filter((o) => o.status === 201);
    expect(created).toHaveLength(1);
    for (const outcome of outcomes) {
      if (outcome.status === 201) continue;
      if (outcome.status === 200) {
        expect(outcome.replayed).toBe('true');
        expect(outcome.body).toEqual(created[0]!.body);
      } else {
        expect(outcome.status).toBe(409);
        expect(outcome.body.error?.code).toBe('idempotency_key_in_use');
      }
    }
    expect(await keyIds(user.auth)).toEqual([created[0]!.body.id!]);
  });
});

describe('a create route that requires Idempotency-Key', () => {
  test('a request without the header is 400 idempotency_key_required and the handler never runs', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const name = uniqueName('missing');
    const response = await postThing(t, ws.key, null, { name });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('idempotency_key_required');
    expect(behaviour(name).calls).toBe(0);
  });

  test('authentication comes first: no API key is 401 even without Idempotency-Key', async () => {
    const name = uniqueName('anonymous');
    const response = await t.request('/test/things', { method: 'POST', json: { name } });
    expect(response.status).toBe(401);
    expect(behaviour(name).calls).toBe(0);
  });

  test('while the first request runs, an identical one is 409 in use; afterwards it replays', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const name = uniqueName('blocked');
    const key = uniqueKey();
    const release = holdAtGate(name);

    const first = postThing(t, ws.key, key, { name });
    await eventually(async () => (behaviour(name).calls === 1 ? true : undefined));

    const concurrent = await postThing(t, ws.key, key, { name });
    expect(concurrent.status).toBe(409);
    expect((await errorOf(concurrent)).code).toBe('idempotency_key_in_use');
    // A different request with the key is a reuse, even while the first runs.
    const different = await postThing(t, ws.key, key, { name, colour: 'red' });
    expect(different.status).toBe(409);
    expect((await errorOf(different)).code).toBe('idempotency_key_reused');

    release();
    const done = await first;
    expect(done.status).toBe(201);
    const original = await done.json();
    expect(original).toMatchObject({ name, call: 1 });

    const replay = await postThing(t, ws.key, key, { name });
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(original);
    expect(behaviour(name).calls).toBe(1);
  });

  test('a handler failure (500) releases the claim, so a retry with the same key runs again', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const name = uniqueName('flaky');
    const key = uniqueKey();
    behaviour(name).failures = 1;

    const failed = await postThing(t, ws.key, key, { name });
    expect(failed.status).toBe(500);
    expect((await errorOf(failed)).code).toBe('internal_error');
    // The claim is dropped once the failed response is out.
    await eventually(async () => ((await recordCount(ws.workspace.id, key)) === 0 ? true : undefined));

    const retried = await postThing(t, ws.key, key, { name });
    expect(retried.status).toBe(201);
    expect(await retried.json()).toMatchObject({ name, call: 2 });
    expect(behaviour(name).calls).toBe(2);

    const replay = await postThing(t, ws.key, key, { name });
    expect(replay.status).toBe(200);
    expect(behaviour(name).calls).toBe(2);
  });

  test('a response given as status(202, body) is stored with its own body and replayed', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const name = uniqueName('accepted');
    const key = uniqueKey();
    const post = () => t.request('/test/accepted', { method: 'POST', headers: { ...ws.keyHeaders, 'idempotency-key': key }, json: { name } });

    const first = await post();
    expect(first.status).toBe(202);
    const original = await first.json();
    expect(original).toMatchObject({ name, call: 1 });

    const replay = await post();
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toEqual(original);
    expect(behaviour(name).calls).toBe(1);
  });

  test('an error answered as status(409, body) is not stored, so a retry runs again', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const name = uniqueName('refused');
    const key = uniqueKey();
    const post = () => t.request('/test/refused', { method: 'POST', headers: { ...ws.keyHeaders, 'idempotency-key': key }, json: { name } });

    const first = await post();
    expect(first.status).toBe(409);
    expect((await errorOf(first)).code).toBe('thing_conflict');
    await eventually(async () => ((await recordCount(ws.workspace.id, key)) === 0 ? true : undefined));

    const retried = await post();
    expect(retried.status).toBe(409);
    expect((await errorOf(retried)).code).toBe('thing_conflict');
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(behaviour(name).calls).toBe(2);
  });

  test('a 400 from validation leaves no claim behind', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const key = uniqueKey();
    const invalid = await postThing(t, ws.key, key, { name: 42 });
    expect(invalid.status).toBe(400);
    const name = uniqueName('after-invalid');
    const valid = await postThing(t, ws.key, key, { name });
    expect(valid.status).toBe(201);
  });

  test('50 concurrent identical requests run the handler exactly once', async () => {
    const ws = await workspaceWithKey(t, { tier: 'pro' });
    const name = uniqueName('stampede');
    const key = uniqueKey();
    const responses = await Promise.all(Array.from({ length: 50 }, () => postThing(t, ws.key, key, { name })));
    const statuses = responses.map((response) => response.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(1);
    expect(statuses.every((status) => status === 201 || status === 200 || status === 409)).toBe(true);
    for (const response of responses.filter((r) => r.status === 409)) {
      expect((await errorOf(response)).code).toBe('idempotency_key_in_use');
    }
    expect(behaviour(name).calls).toBe(1);
  });

  test('the same key is independent per workspace', async () => {
    const a = await workspaceWithKey(t, { tier: 'pro' });
    const b = await workspaceWithKey(t, { tier: 'pro' });
    const name = uniqueName('per-workspace');
    const key = uniqueKey();
    expect((await postThing(t, a.key, key, { name })).status).toBe(201);
    expect((await postThing(t, b.key, key, { name })).status).toBe(201);
    expect(behaviour(name).calls).toBe(2);
  });
});

describe('retention', () => {
  test('records expire after 24 h: cleanup deletes them and the key can be used for a new request', async () => {
    const clock = testClock();
    const app = createTestApp({ now: clock.now, extend: mountThings });
    try {
      const ws = await workspaceWithKey(app, { tier: 'pro' });
      const name = uniqueName('retained');
      const oldKey = uniqueKey();
      const youngKey = uniqueKey();

      expect((await postThing(app, ws.key, oldKey, { name })).status).toBe(201);
      clock.advance(IDEMPOTENCY_RETENTION_MS / 2);
      expect((await postThing(app, ws.key, youngKey, { name })).status).toBe(201);

      // Just before 24 h the record still answers: replay, and a different body is refused.
      clock.advance(IDEMPOTENCY_RETENTION_MS / 2 - 1);
      expect((await postThing(app, ws.key, oldKey, { name })).status).toBe(200);
      expect((await postThing(app, ws.key, oldKey, { name, colour: 'blue' })).status).toBe(409);
      expect(await deleteExpiredIdempotencyRecords(app.deps.sql, clock.now())).toBeGreaterThanOrEqual(0);
      expect(await recordCount(ws.workspace.id, oldKey)).toBe(1);

      clock.advance(1);
      expect(await deleteExpiredIdempotencyRecords(app.deps.sql, clock.now())).toBeGreaterThanOrEqual(1);
      expect(await recordCount(ws.workspace.id, oldKey)).toBe(0);
      expect(await recordCount(ws.workspace.id, youngKey)).toBe(1);

      // Past retention the key is free: another request with it runs and is created afresh.
      const reused = await postThing(app, ws.key, oldKey, { name, colour: 'blue' });
      expect(reused.status).toBe(201);
      expect(behaviour(name).calls).toBe(3);
      // The younger record still replays.
      expect((await postThing(app, ws.key, youngKey, { name })).status).toBe(200);
    } finally {
      await app.close();
    }
  });

  test('an expired record is taken over by a new request even before cleanup runs', async () => {
    const clock = testClock();
    const app = createTestApp({ now: clock.now, extend: mountThings });
    try {
      const ws = await workspaceWithKey(app, { tier: 'pro' });
      const name = uniqueName('taken-over');
      const key = uniqueKey();
      expect((await postThing(app, ws.key, key, { name })).status).toBe(201);
      clock.advance(IDEMPOTENCY_RETENTION_MS);
      const fresh = await postThing(app, ws.key, key, { name, colour: 'green' });
      expect(fresh.status).toBe(201);
      expect(await fresh.json()).toMatchObject({ call: 2 });
      expect(await recordCount(ws.workspace.id, key)).toBe(1);
    } finally {
      await app.close();
    }
  });
});

describe('stored responses', () => {
  test('keep neither the raw Idempotency-Key nor the new API key in the database', async () => {
    const user = await signUp(t);
    const idempotencyKey = `secret-check-${crypto.randomUUID()}`;
    const first = await t.request('/v1/me/keys', { method: 'POST', headers: { ...user.auth, 'idempotency-key': idempotencyKey }, json: { label: 'sealed' } });
    expect(first.status).toBe(201);
    const created = (await first.json()) as { key: string };
    const rows = await t.deps.sql`select * from idempotency_records where workspace_id = ${user.workspace.id}`;
    expect(rows).toHaveLength(1);
    const stored = JSON.stringify(rows[0], (_name, value) =>
      value instanceof Uint8Array || (value && value.type === 'Buffer') ? Buffer.from(value).toString('latin1') : value,
    );
    expect(stored).not.toContain(idempotencyKey);
    expect(stored).not.toContain(created.key);
    const replay = await t.request('/v1/me/keys', { method: 'POST', headers: { ...user.auth, 'idempotency-key': idempotencyKey }, json: { label: 'sealed' } });
    expect(replay.status).toBe(200);
    expect(((await replay.json()) as { key: string }).key).toBe(created.key);
  });
});
