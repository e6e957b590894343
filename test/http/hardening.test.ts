import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { z } from 'zod';
import { parseDateTime } from '../../shared/http/validation.ts';
import { createTestApp, errorOf, signUp, TEST_PASSWORD, type TestApp, uniqueEmail, workspaceWithKey } from '../helpers.ts';

/**
 * Regression tests for the defects of issue 10, items 1–4: each answered 500 before the shared
 * validation layer (shared/http/validation.ts) and the session cookie fix.
 */

const OUT_OF_RANGE = ['0000-01-01T00:00:00Z', '0001-01-01T00:00:00+14:00', '9999-12-31T23:59:59-14:00', '1969-12-31T23:59:59Z', '10000-01-01T00:00:00Z'];

describe('the shared date-time schema', () => {
  test('accepts RFC 3339 with Z or an offset, lower-case t/z and long fractions', () => {
    expect(parseDateTime('2026-01-31T12:00:00Z')?.toISOString()).toBe('2026-01-31T12:00:00.000Z');
    expect(parseDateTime('2026-01-31T12:00:00+02:00')?.toISOString()).toBe('2026-01-31T10:00:00.000Z');
    expect(parseDateTime('2026-01-31t12:00:00.123456789z')?.toISOString()).toBe('2026-01-31T12:00:00.123Z');
    expect(parseDateTime('2024-02-29T00:00:00Z')?.toISOString()).toBe('2024-02-29T00:00:00.000Z');
  });

  test('refuses other spellings, impossible dates and instants outside 1970–9999', () => {
    for (const value of [
      ...OUT_OF_RANGE,
      '2026-01-31',
      '2026-01-31 12:00:00Z',
      '2026-02-30T00:00:00Z',
      '2025-02-29T00:00:00Z',
      '2026-01-31T24:00:00Z',
      '2026-01-31T12:00:00+24:00',
      '+002026-01-31T12:00:00Z',
      'now',
    ]) {
      expect({ value, parsed: parseDateTime(value) }).toEqual({ value, parsed: null });
    }
  });
});

describe('hostile input is a 400 naming the field, never a 500', () => {
  let t: TestApp;
  let ws: Awaited<ReturnType<typeof workspaceWithKey>>;

  beforeAll(async () => {
    t = createTestApp();
    ws = await workspaceWithKey(t, { tier: 'enterprise', budgets: { minute: null, day: null } });
  });

  afterAll(async () => {
    await t.close();
  });

  const get = (path: string) => t.request(path, { headers: ws.keyHeaders });
  async function expectInvalid(response: Response, field: string) {
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.details?.map((detail) => detail.field)).toContain(field);
  }

  test('item 1: out-of-range date-times on every date-time input', async () => {
    for (const value of OUT_OF_RANGE) {
      const at = encodeURIComponent(value);
      await expectInvalid(await get(`/v2/audit/events?from=${at}`), 'query.from');
      await expectInvalid(await get(`/v2/audit/events?to=${at}`), 'query.to');
      await expectInvalid(await get(`/v2/prices/itm_aaaaaaaaaaaaaaaaaaaaaaaaaa/history?marketplace=skinport&from=${at}`), 'query.from');
      await expectInvalid(await get(`/v2/market-index/cs2/history?marketplace=skinport&to=${at}`), 'query.to');
      const exportResponse = await t.request('/v2/audit/exports', {
        method: 'POST',
        headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() },
        json: { from: value, to: '2026-01-01T00:00:00Z' },
      });
      await expectInvalid(exportResponse, 'body.from');
    }
  });

  test('item 2: NUL in any text (account, key label, webhook description, catalog q)', async () => {
    await expectInvalid(
      await t.request('/v1/accounts', { method: 'POST', json: { email: uniqueEmail(), password: TEST_PASSWORD, workspace_name: 'a\u0000b' } }),
      'body.workspace_name',
    );
    await expectInvalid(await t.request('/v1/accounts', { method: 'POST', json: { email: `a\u0000${uniqueEmail()}`, password: TEST_PASSWORD } }), 'body.email');
    await expectInvalid(await t.request('/v1/me/keys', { method: 'POST', headers: ws.auth, json: { label: 'a\u0000b' } }), 'body.label');
    await expectInvalid(
      await t.request('/v2/webhooks', {
        method: 'POST',
        headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID() },
        json: { url: 'https://example.com/hook', event_types: ['price.updated'], description: 'a\u0000b' },
      }),
      'body.description',
    );
    await expectInvalid(await get('/v2/catalog/items?q=%00'), 'query.q');
  });

  test('item 3: lone surrogates in a key label or a webhook description', async () => {
    const label = await t.request('/v1/me/keys', { method: 'POST', headers: { ...ws.auth, 'content-type': 'application/json' }, body: '{"label":"\\ud800"}' });
    await expectInvalid(label, 'body.label');
    const description = await t.request('/v2/webhooks', {
      method: 'POST',
      headers: { ...ws.keyHeaders, 'idempotency-key': crypto.randomUUID(), 'content-type': 'application/json' },
      body: '{"url":"https://example.com/hook","event_types":["price.updated"],"description":"x\\udfffy"}',
    });
    await expectInvalid(description, 'body.description');
  });

  test('item 4: a cookie that cannot be decoded is no session (401)', async () => {
    const user = await signUp(t);
    for (const cookie of ['session=%', 'session=%E0%A4%A', `session=${user.token}%`]) {
      for (const [method, path] of [
        ['GET', '/v1/me/keys'],
        ['DELETE', '/v1/sessions/current'],
        ['POST', '/v1/me/keys'],
      ] as const) {
        const response = await t.request(path, { method, headers: { cookie } });
        expect({ cookie, path, status: response.status }).toEqual({ cookie, path, status: 401 });
        expect((await errorOf(response)).code).toBe('unauthorized');
      }
    }
    // The well-formed cookie still works.
    expect((await t.request('/v1/me/keys', { headers: { cookie: `session=${encodeURIComponent(user.token)}` } })).status).toBe(200);
  });
});

describe('a response that breaks its own schema', () => {
  test('is a 500 internal_error (our fault), not a 400 blaming the client', async () => {
    const t = createTestApp({
      extend: (app) => app.get('/test/broken-response', () => ({ count: 'many' }) as never, { response: { 200: z.object({ count: z.number() }) } }),
    });
    try {
      const response = await t.request('/test/broken-response');
      expect(response.status).toBe(500);
      expect((await errorOf(response)).code).toBe('internal_error');
    } finally {
      await t.close();
    }
  });
});
