import { afterAll, describe, expect, test } from 'bun:test';
import { AUDIT_METADATA_MAX_BYTES, type AuditEvent, AuditMetadataTooLargeError, insertAuditEvent, type NewAuditEvent } from '../../shared/audit/events.ts';
import { createKey, createTestApp, errorOf, signUp, type TestApp, workspaceWithKey } from '../helpers.ts';

const t = createTestApp();
afterAll(() => t.close());

type Page = { data: AuditEvent[]; next_cursor: string | null };

function listEvents(app: TestApp, key: string | null, query: Record<string, string> = {}) {
  const search = new URLSearchParams(query).toString();
  return app.request(`/v2/audit/events${search ? `?${search}` : ''}`, { headers: key ? { 'x-api-key': key } : {} });
}

async function page(key: string, query: Record<string, string> = {}): Promise<Page> {
  const response = await listEvents(t, key, query);
  if (response.status !== 200) throw new Error(`listing failed: ${response.status} ${await response.text()}`);
  return (await response.json()) as Page;
}

/** Every event matching `query`, following next_cursor to the end. */
async function allEvents(key: string, query: Record<string, string> = {}): Promise<{ events: AuditEvent[]; pages: number }> {
  const events: AuditEvent[] = [];
  let cursor: string | null = null;
  let pages = 0;
  do {
    const current: Page = await page(key, { ...query, ...(cursor ? { cursor } : {}) });
    events.push(...current.data);
    cursor = current.next_cursor;
    pages += 1;
    if (pages > 1_000) throw new Error('pagination does not terminate');
  } while (cursor);
  return { events, pages };
}

/** A workspace with one key that can read the audit log (pro tier: the paging tests use many units). */
const auditReader = () => workspaceWithKey(t, { tier: 'pro' });

const event = (workspaceId: string, overrides: Partial<NewAuditEvent> = {}): NewAuditEvent => ({
  workspaceId,
  eventType: 'thing.created',
  resourceType: 'thing',
  resourceId: crypto.randomUUID(),
  outcome: 'succeeded',
  actor: { type: 'system', id: null },
  ...overrides,
});

// A fixed hour long before any test ran: events placed here never mix with sign-up events.
const BASE = Date.parse('2021-03-04T05:00:00.000Z');
const at = (offsetMs: number) => new Date(BASE + offsetMs);
const range = { from: at(-3_600_000).toISOString(), to: at(3_600_000).toISOString() };

function flipChar(text: string, index: number): string {
  const char = text[index]!;
  const replacement = char === 'A' ? 'B' : 'A';
  return `${text.slice(0, index)}${replacement}${text.slice(index + 1)}`;
}

describe('access to GET /v2/audit/events', () => {
  test('a key without audit:read gets 403 insufficient_scope naming the scope, recorded as a rejected event', async () => {
    const ws = await auditReader();
    const limited = await createKey(t, ws.token, { scopes: ['usage:read'] });

    const denied = await listEvents(t, limited.key);
    expect(denied.status).toBe(403);
    const requestId = denied.headers.get('x-request-id');
    const error = await errorOf(denied);
    expect(error.code).toBe('insufficient_scope');
    expect(error.message).toContain('audit:read');
    expect(error.details).toEqual([{ field: 'scope', message: 'audit:read' }]);

    const { data } = await page(ws.key, { event_type: 'request.denied', outcome: 'rejected' });
    const recorded = data.find((e) => e.request_id === requestId);
    expect(recorded).toBeDefined();
    expect(recorded).toMatchObject({
      source: 'platform',
      event_type: 'request.denied',
      resource_type: 'operation',
      resource_id: 'audit_events.list',
      outcome: 'rejected',
      actor: { type: 'api_key', id: limited.id },
      metadata: { status: 403, reason: 'insufficient_scope', required_scope: 'audit:read' },
    });
  });

  test('a revoked key gets 401 and the attempt is recorded as rejected', async () => {
    const ws = await auditReader();
    const doomed = await createKey(t, ws.token, { scopes: ['audit:read'] });
    // Used once while live, so a cached lookup exists that revocation must clear.
    expect((await listEvents(t, doomed.key)).status).toBe(200);

    const revoked = await t.request(`/v1/me/keys/${doomed.id}`, { method: 'DELETE', headers: ws.auth });
    expect(revoked.status).toBe(204);

    const denied = await listEvents(t, doomed.key);
    expect(denied.status).toBe(401);
    expect((await errorOf(denied)).code).toBe('unauthorized');
    const requestId = denied.headers.get('x-request-id');

    const { data } = await page(ws.key, { event_type: 'request.denied' });
    expect(data.find((e) => e.request_id === requestId)).toMatchObject({
      outcome: 'rejected',
      resource_id: 'audit_events.list',
      actor: { type: 'api_key', id: doomed.id },
      metadata: { status: 401, reason: 'key_revoked' },
    });
  });

  test('a missing or unknown key gets 401', async () => {
    const missing = await listEvents(t, null);
    expect(missing.status).toBe(401);
    expect((await errorOf(missing)).code).toBe('unauthorized');
    const unknown = await listEvents(t, 'cs2_not-a-real-key');
    expect(unknown.status).toBe(401);
    expect((await errorOf(unknown)).code).toBe('unauthorized');
  });
});

describe('events recorded by mutations', () => {
  test('sign-up, key creation and key revocation each record an event with its resource and actor', async () => {
    const ws = await auditReader();
    const created = await t.request('/v1/me/keys', { method: 'POST', headers: ws.auth, json: { label: 'ci', scopes: ['prices:read'] } });
    expect(created.status).toBe(201);
    const key = (await created.json()) as { id: string; created_at: string; prefix: string };
    const createRequestId = created.headers.get('x-request-id');
    const revoked = await t.request(`/v1/me/keys/${key.id}`, { method: 'DELETE', headers: ws.auth });
    expect(revoked.status).toBe(204);
    const revokeRequestId = revoked.headers.get('x-request-id');

    const { events } = await allEvents(ws.key);
    const byType = (type: string) => events.filter((e) => e.event_type === type);
    const actor = { type: 'account', id: ws.account.id };

    expect(byType('account.created')).toEqual([expect.objectContaining({ resource_type: 'account', resource_id: ws.account.id, outcome: 'succeeded', actor })]);
    expect(byType('account.created')[0]!.metadata).toEqual({ email: ws.email });
    const sessions = byType('session.created');
    expect(sessions).toHaveLength(1);
    expect(sessions[0]).toMatchObject({ resource_type: 'session', outcome: 'succeeded', actor });
    expect(sessions[0]!.resource_id).toBeString();
    // Account and session come from one request, so one request id.
    expect(sessions[0]!.request_id).toBe(byType('account.created')[0]!.request_id);

    const keyCreated = byType('api_key.created').find((e) => e.resource_id === key.id);
    expect(keyCreated).toMatchObject({
      resource_type: 'api_key',
      outcome: 'succeeded',
      actor,
      request_id: createRequestId,
      // Written in the transaction that made the key, with the same clock reading.
      occurred_at: key.created_at,
      metadata: { label: 'ci', prefix: key.prefix, scopes: ['prices:read'] },
    });
    expect(byType('api_key.revoked')).toEqual([
      expect.objectContaining({ resource_type: 'api_key', resource_id: key.id, outcome: 'succeeded', actor, request_id: revokeRequestId }),
    ]);
  });

  test('a failed revocation records nothing', async () => {
    const ws = await auditReader();
    const missing = await t.request(`/v1/me/keys/${crypto.randomUUID()}`, { method: 'DELETE', headers: ws.auth });
    expect(missing.status).toBe(404);
    const { events } = await allEvents(ws.key, { event_type: 'api_key.revoked' });
    expect(events).toEqual([]);
  });
});

describe('filters', () => {
  test('source, event_type, resource_type and outcome each narrow the listing', async () => {
    const ws = await auditReader();
    const id = ws.workspace.id;
    const ids = {
      platform: await insertAuditEvent(t.deps.sql, event(id, { occurredAt: at(1), eventType: 'scene.created', resourceType: 'scene' })),
      game: await insertAuditEvent(
        t.deps.sql,
        event(id, { occurredAt: at(2), source: 'gameplatform', eventType: 'account.connected', resourceType: 'gameplatform_account' }),
      ),
      failed: await insertAuditEvent(t.deps.sql, event(id, { occurredAt: at(3), eventType: 'render.requested', resourceType: 'render', outcome: 'failed' })),
      recorded: await insertAuditEvent(
        t.deps.sql,
        event(id, { occurredAt: at(4), eventType: 'render.requested', resourceType: 'render', outcome: 'recorded' }),
      ),
    };
    const listed = async (query: Record<string, string>) => (await allEvents(ws.key, { ...range, ...query })).events.map((e) => e.id);

    expect(await listed({})).toEqual([ids.recorded, ids.failed, ids.game, ids.platform]);
    expect(await listed({ source: 'gameplatform' })).toEqual([ids.game]);
    expect(await listed({ source: 'platform' })).toEqual([ids.recorded, ids.failed, ids.platform]);
    expect(await listed({ event_type: 'render.requested' })).toEqual([ids.recorded, ids.failed]);
    expect(await listed({ resource_type: 'gameplatform_account' })).toEqual([ids.game]);
    expect(await listed({ outcome: 'failed' })).toEqual([ids.failed]);
    expect(await listed({ outcome: 'accepted' })).toEqual([]);
    expect(await listed({ event_type: 'render.requested', outcome: 'recorded', source: 'platform', resource_type: 'render' })).toEqual([ids.recorded]);
  });

  test('from is inclusive and to is exclusive', async () => {
    const ws = await auditReader();
    const id = ws.workspace.id;
    const before = await insertAuditEvent(t.deps.sql, event(id, { occurredAt: at(-1) }));
    const atFrom = await insertAuditEvent(t.deps.sql, event(id, { occurredAt: at(0) }));
    const inside = await insertAuditEvent(t.deps.sql, event(id, { occurredAt: at(500) }));
    const lastInside = await insertAuditEvent(t.deps.sql, event(id, { occurredAt: at(999) }));
    const atTo = await insertAuditEvent(t.deps.sql, event(id, { occurredAt: at(1_000) }));

    const listed = async (query: Record<string, string>) => (await allEvents(ws.key, query)).events.map((e) => e.id);
    expect(await listed({ from: at(0).toISOString(), to: at(1_000).toISOString() })).toEqual([lastInside, inside, atFrom]);
    expect(await listed({ from: at(0).toISOString(), to: at(1_001).toISOString() })).toEqual([atTo, lastInside, inside, atFrom]);
    // Only `from`, only `to`, and an offset other than Z name the same instants.
    expect((await listed({ from: at(999).toISOString() })).slice(-2)).toEqual([atTo, lastInside]);
    expect(await listed({ to: at(0).toISOString(), from: at(-10).toISOString() })).toEqual([before]);
    expect(await listed({ from: '2021-03-04T07:00:00.500+02:00', to: '2021-03-04T07:00:01.000+02:00' })).toEqual([lastInside, inside]);
  });

  test.each([
    ['an unknown outcome', { outcome: 'maybe' }],
    ['an unknown source', { source: 'elsewhere' }],
    ['an event_type with capitals', { event_type: 'Thing.created' }],
    ['an event_type of one character', { event_type: 'a' }],
    ['an event_type starting with a digit', { event_type: '1thing' }],
    ['an event_type over 80 characters', { event_type: `a${'b'.repeat(80)}` }],
    ['a resource_type with a space', { resource_type: 'api key' }],
    ['a from that is not a date-time', { from: 'yesterday' }],
    ['a to without a time', { to: '2021-03-04' }],
    ['limit 0', { limit: '0' }],
    ['limit 201', { limit: '201' }],
    ['limit abc', { limit: 'abc' }],
    ['a fractional limit', { limit: '1.5' }],
    ['from equal to to', { from: at(0).toISOString(), to: at(0).toISOString() }],
    ['from after to', { from: at(1).toISOString(), to: at(0).toISOString() }],
  ])('%s is a 400', async (_name, query) => {
    const ws = await auditReader();
    const response = await listEvents(t, ws.key, query as Record<string, string>);
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_request');
  });

  test('the longest valid event_type (80 characters) is accepted', async () => {
    const ws = await auditReader();
    const name = `a${'b'.repeat(79)}`;
    const id = await insertAuditEvent(t.deps.sql, event(ws.workspace.id, { eventType: name, occurredAt: at(0) }));
    expect((await page(ws.key, { event_type: name })).data.map((e) => e.id)).toEqual([id]);
  });
});

describe('paging', () => {
  test('pages are newest first, 50 by default and at most 200', async () => {
    const ws = await auditReader();
    const ids: string[] = [];
    for (let i = 0; i < 210; i += 1) ids.push(await insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(i * 1_000) })));
    const newestFirst = [...ids].reverse();

    const first = await page(ws.key, range);
    expect(first.data.map((e) => e.id)).toEqual(newestFirst.slice(0, 50));
    expect(first.next_cursor).toBeString();
    const times = first.data.map((e) => Date.parse(e.occurred_at));
    expect(times).toEqual([...times].sort((a, b) => b - a));

    const largest = await page(ws.key, { ...range, limit: '200' });
    expect(largest.data.map((e) => e.id)).toEqual(newestFirst.slice(0, 200));
    const rest = await page(ws.key, { ...range, limit: '200', cursor: largest.next_cursor! });
    expect(rest.data.map((e) => e.id)).toEqual(newestFirst.slice(200));
    expect(rest.next_cursor).toBeNull();
  });

  test('keyset paging over 120 events sharing one timestamp neither skips nor repeats', async () => {
    const ws = await auditReader();
    const occurredAt = at(42);
    const inserted = await Promise.all(Array.from({ length: 120 }, () => insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt }))));

    const { events, pages } = await allEvents(ws.key, { ...range, limit: '7' });
    const ids = events.map((e) => e.id);
    expect(pages).toBe(Math.ceil(120 / 7));
    expect(ids).toHaveLength(120);
    expect(new Set(ids).size).toBe(120);
    expect(new Set(ids)).toEqual(new Set(inserted));
    // Ties on occurred_at are broken by id, descending.
    expect(ids).toEqual([...inserted].sort().reverse());
    expect(events.every((e) => e.occurred_at === occurredAt.toISOString())).toBe(true);
  });

  test('events with microsecond-close timestamps page without loss', async () => {
    const ws = await auditReader();
    // Timestamps a microsecond apart: a cursor that kept only milliseconds would skip or repeat here.
    const inserted: string[] = [];
    for (let i = 0; i < 12; i += 1) {
      const id = crypto.randomUUID();
      await t.deps.sql`
        insert into audit_events (id, workspace_id, occurred_at, source, event_type, resource_type, outcome, actor_type, actor_id, metadata)
        values (${id}, ${ws.workspace.id}, ${`2021-03-04T05:00:00.000${String(i % 4).padStart(3, '0')}Z`}::timestamptz,
                'platform', 'thing.created', 'thing', 'succeeded', 'system', null, '{}'::jsonb)`;
      inserted.push(id);
    }
    const { events } = await allEvents(ws.key, { ...range, limit: '5' });
    expect(events).toHaveLength(12);
    expect(new Set(events.map((e) => e.id))).toEqual(new Set(inserted));
  });

  test('an empty listing has no next cursor', async () => {
    const ws = await auditReader();
    expect(await page(ws.key, range)).toEqual({ data: [], next_cursor: null });
  });

  test('a cursor may be used with another page size', async () => {
    const ws = await auditReader();
    for (let i = 0; i < 6; i += 1) await insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(i) }));
    const first = await page(ws.key, { ...range, limit: '2' });
    const second = await page(ws.key, { ...range, limit: '4', cursor: first.next_cursor! });
    expect(second.data).toHaveLength(4);
    expect(second.next_cursor).toBeNull();
  });
});

describe('cursor integrity', () => {
  async function cursorOf(key: string, query: Record<string, string>) {
    const first = await page(key, { ...query, limit: '1' });
    expect(first.next_cursor).toBeString();
    return first.next_cursor!;
  }

  async function expectInvalidCursor(key: string, query: Record<string, string>) {
    const response = await listEvents(t, key, query);
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_cursor');
  }

  test('a genuine cursor is accepted with its own filters', async () => {
    const ws = await auditReader();
    await insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(1) }));
    await insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(2) }));
    const cursor = await cursorOf(ws.key, range);
    expect((await listEvents(t, ws.key, { ...range, limit: '1', cursor })).status).toBe(200);
  });

  test('tampered, garbage, re-filtered and foreign cursors are 400 invalid_cursor', async () => {
    const ws = await auditReader();
    const other = await auditReader();
    for (const w of [ws, other]) {
      await insertAuditEvent(t.deps.sql, event(w.workspace.id, { occurredAt: at(1) }));
      await insertAuditEvent(t.deps.sql, event(w.workspace.id, { occurredAt: at(2) }));
    }
    const cursor = await cursorOf(ws.key, range);
    const [payload, signature] = cursor.split('.') as [string, string];

    // Edited payload (several positions) and edited signature.
    for (const index of [0, Math.floor(payload.length / 2), payload.length - 2]) {
      await expectInvalidCursor(ws.key, { ...range, cursor: `${flipChar(payload, index)}.${signature}` });
    }
    await expectInvalidCursor(ws.key, { ...range, cursor: `${payload}.${flipChar(signature, 0)}` });
    await expectInvalidCursor(ws.key, { ...range, cursor: `${payload}.${flipChar(signature, 10)}` });
    // A payload re-signed by nobody: a self-made position with the original signature.
    const forged = Buffer.from(
      JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), p: { occurred_at: at(3).toISOString(), id: crypto.randomUUID() } }),
    ).toString('base64url');
    await expectInvalidCursor(ws.key, { ...range, cursor: `${forged}.${signature}` });
    // Garbage.
    for (const garbage of ['garbage', 'a.b', `${payload}.`, `.${signature}`, `${cursor}.extra`, '%%%']) {
      await expectInvalidCursor(ws.key, { ...range, cursor: garbage });
    }
    // Same cursor, different filters: an added filter, a changed bound, a dropped bound.
    await expectInvalidCursor(ws.key, { ...range, outcome: 'succeeded', cursor });
    await expectInvalidCursor(ws.key, { ...range, event_type: 'thing.created', cursor });
    await expectInvalidCursor(ws.key, { ...range, to: at(3_000_000).toISOString(), cursor });
    await expectInvalidCursor(ws.key, { from: range.from, cursor });
    // Another workspace's key, with the very same filters.
    await expectInvalidCursor(other.key, { ...range, cursor });
    // A cursor issued to the other workspace is equally refused here.
    await expectInvalidCursor(ws.key, { ...range, cursor: await cursorOf(other.key, range) });
  });

  test('an over-long cursor is a 400', async () => {
    const ws = await auditReader();
    const response = await listEvents(t, ws.key, { cursor: 'x'.repeat(3_000) });
    expect(response.status).toBe(400);
  });
});

describe('isolation and redaction', () => {
  test("a workspace never sees another workspace's events", async () => {
    const a = await auditReader();
    const b = await auditReader();
    const aEvent = await insertAuditEvent(t.deps.sql, event(a.workspace.id, { occurredAt: at(1), eventType: 'shared.name' }));
    const bEvent = await insertAuditEvent(t.deps.sql, event(b.workspace.id, { occurredAt: at(1), eventType: 'shared.name' }));

    const seenByA = (await allEvents(a.key)).events;
    const seenByB = (await allEvents(b.key)).events;
    expect(seenByA.map((e) => e.id)).toContain(aEvent);
    expect(seenByA.map((e) => e.id)).not.toContain(bEvent);
    expect(seenByB.map((e) => e.id)).toContain(bEvent);
    expect(seenByB.map((e) => e.id)).not.toContain(aEvent);
    // Each side's sign-up events name only its own account.
    expect(seenByA.filter((e) => e.event_type === 'account.created').map((e) => e.resource_id)).toEqual([a.account.id]);
    expect(seenByB.filter((e) => e.event_type === 'account.created').map((e) => e.resource_id)).toEqual([b.account.id]);
    expect((await page(b.key, { event_type: 'shared.name' })).data.map((e) => e.id)).toEqual([bEvent]);
  });

  test('secret-named keys are redacted at any depth, arrays included, on listing', async () => {
    const ws = await auditReader();
    const metadata = {
      a: {
        password: 'x',
        nested: [
          { api_key: 'k', ok: 1 },
          { deeper: { Authorization: 'Bearer z', Private_Key: 'p', client_secret: 's', signature: 'g', token: 't', keep: 'visible' } },
          ['plain', { refresh_token: { even: 'objects' } }],
        ],
      },
      label: 'visible',
      count: 3,
      tokenless: 'this key names a token', // the name matches, so it is redacted too
      list: [1, 'two', null, true],
    };
    const id = await insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(0), metadata }));

    const [listed] = (await page(ws.key, { ...range })).data;
    expect(listed!.id).toBe(id);
    expect(listed!.metadata).toEqual({
      a: {
        password: '[REDACTED]',
        nested: [
          { api_key: '[REDACTED]', ok: 1 },
          {
            deeper: {
              Authorization: '[REDACTED]',
              Private_Key: '[REDACTED]',
              client_secret: '[REDACTED]',
              signature: '[REDACTED]',
              token: '[REDACTED]',
              keep: 'visible',
            },
          },
          ['plain', { refresh_token: '[REDACTED]' }],
        ],
      },
      label: 'visible',
      count: 3,
      tokenless: '[REDACTED]',
      list: [1, 'two', null, true],
    });
    // Redaction happens on read: the record itself is intact.
    const [stored] = await t.deps.sql<{ metadata: unknown }[]>`select metadata from audit_events where id = ${id}`;
    expect(stored!.metadata).toEqual(metadata);
  });
});

describe('metadata size', () => {
  const padded = (bytes: number, char = 'a') => {
    // {"x":"…"} is 8 bytes of framing around the string.
    const charBytes = Buffer.byteLength(char);
    return { x: char.repeat((bytes - 8) / charBytes) };
  };

  test('exactly 32 KiB of metadata is stored and listed', async () => {
    const ws = await auditReader();
    const metadata = padded(AUDIT_METADATA_MAX_BYTES);
    expect(Buffer.byteLength(JSON.stringify(metadata))).toBe(32 * 1024);
    const id = await insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(0), metadata }));
    const [listed] = (await page(ws.key, range)).data;
    expect(listed!.id).toBe(id);
    expect(listed!.metadata).toEqual(metadata);
  });

  test('metadata over 32 KiB is refused at write time and nothing is stored', async () => {
    const ws = await auditReader();
    const tooLarge = padded(AUDIT_METADATA_MAX_BYTES + 1);
    const write = insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(0), metadata: tooLarge }));
    await expect(write).rejects.toBeInstanceOf(AuditMetadataTooLargeError);
    await write.catch((error: AuditMetadataTooLargeError) => expect(error.bytes).toBe(AUDIT_METADATA_MAX_BYTES + 1));
    // Bytes, not characters: 2-byte characters reach the limit at half the length.
    const multibyte = { x: 'é'.repeat(AUDIT_METADATA_MAX_BYTES / 2) };
    expect(JSON.stringify(multibyte).length).toBeLessThan(AUDIT_METADATA_MAX_BYTES + 8);
    await expect(insertAuditEvent(t.deps.sql, event(ws.workspace.id, { occurredAt: at(0), metadata: multibyte }))).rejects.toBeInstanceOf(
      AuditMetadataTooLargeError,
    );
    expect(await page(ws.key, range)).toEqual({ data: [], next_cursor: null });
  });

  test('a refused event rolls back the transaction it was part of', async () => {
    const ws = await auditReader();
    const write = t.deps.sql.begin(async (tx) => {
      await insertAuditEvent(tx, event(ws.workspace.id, { occurredAt: at(1), eventType: 'first.part' }));
      await insertAuditEvent(tx, event(ws.workspace.id, { occurredAt: at(2), metadata: padded(AUDIT_METADATA_MAX_BYTES + 2) }));
    });
    await expect(write).rejects.toBeInstanceOf(AuditMetadataTooLargeError);
    expect((await page(ws.key, range)).data).toEqual([]);
  });
});

test('signUp alone leaves exactly the sign-up events', async () => {
  // Guards the factories the other tests build on: a new workspace starts with a known log.
  const user = await signUp(t);
  const [row] = await t.deps.sql<{ count: number }[]>`
    select count(*)::int as count from audit_events where workspace_id = ${user.workspace.id}`;
  expect(row!.count).toBe(2);
});
