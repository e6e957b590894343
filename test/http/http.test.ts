import { afterAll, describe, expect, test } from 'bun:test';
import { createTestApp, errorOf, signUp, workspaceWithKey } from '../helpers.ts';

const t = createTestApp();
afterAll(() => t.close());

describe('shared HTTP conventions', () => {
  test('unknown routes are 404 in the shared error shape, with X-Request-Id', async () => {
    const response = await t.request('/v2/nothing-here');
    expect(response.status).toBe(404);
    const requestId = response.headers.get('x-request-id');
    expect(requestId).toBeTruthy();
    expect(await response.json()).toEqual({ error: { code: 'not_found', message: 'No such route.', request_id: requestId! } });
  });

  test('malformed JSON is 400 malformed_json', async () => {
    const response = await t.request('/v1/accounts', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"email":' });
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('malformed_json');
  });

  test('a body over 1 MiB is 413 payload_too_large', async () => {
    const user = await signUp(t);
    const response = await t.request('/v1/me/keys', {
      method: 'POST',
      headers: { ...user.auth, 'content-type': 'application/json' },
      body: JSON.stringify({ label: 'x'.repeat(1024 * 1024 + 10) }),
    });
    expect(response.status).toBe(413);
    expect((await errorOf(response)).code).toBe('payload_too_large');
  });

  test('a non-JSON content type on a JSON endpoint is 415', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x']) {
      const response = await t.request('/v1/accounts', { method: 'POST', headers: { 'content-type': type }, body: 'email=a@b.co&password=0123456789' });
      expect(response.status).toBe(415);
      expect((await errorOf(response)).code).toBe('unsupported_media_type');
    }
    const missingType = await t.request('/v1/accounts', { method: 'POST', body: '{"email":"a@b.co"}' });
    expect(missingType.status).toBe(415);
  });

  test('validation failures are 400 invalid_request with details, never 422', async () => {
    const response = await t.request('/v1/accounts', { method: 'POST', json: { email: 42, password: ['x'] } });
    expect(response.status).toBe(400);
    const error = await errorOf(response);
    expect(error.code).toBe('invalid_request');
    expect(error.details?.map((detail) => detail.field)).toContain('body.email');
  });

  test('no odd input produces a 500', async () => {
    const ws = await workspaceWithKey(t);
    const bodies = [
      'null',
      '[]',
      '"text"',
      '123',
      'true',
      '{"email":null,"password":null}',
      '{"__proto__":{"x":1}}',
      '\u0000',
      `{"email":"${'é'.repeat(300)}@x.io","password":"${'𝄞'.repeat(100)}"}`,
    ];
    for (const body of bodies) {
      for (const path of ['/v1/accounts', '/v1/sessions', '/v1/me/keys']) {
        const response = await t.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
        expect(response.status).toBeGreaterThanOrEqual(400);
        expect(response.status).toBeLessThan(500);
      }
    }
    const queries = [
      'limit=-1',
      'limit=1e3',
      'limit=2.5',
      'from=yesterday',
      'to=2026-13-45T00:00:00Z',
      'cursor=%00',
      `cursor=${'a'.repeat(5000)}`,
      'source=platform&source=gameplatform',
      'event_type=%E2%80%AE',
      'outcome[]=x',
    ];
    for (const query of queries) {
      const response = await t.request(`/v2/audit/events?${query}`, { headers: ws.keyHeaders });
      expect(response.status).toBe(400);
    }
    for (const key of ['', ' ', 'x'.repeat(10_000), 'cs2_\u00ff']) {
      const response = await t.request('/v2/me', { headers: { 'x-api-key': key } });
      expect(response.status).toBe(401);
    }
    const odd = await t.request('/v1/me/keys/%E0%A4%A', { method: 'DELETE', headers: { authorization: 'Bearer x' } });
    expect(odd.status).toBeLessThan(500);
  });

  test('every response carries X-Request-Id, and a sane incoming one is echoed', async () => {
    const echoed = await t.request('/v2/health', { headers: { 'x-request-id': 'client-req-123' } });
    expect(echoed.headers.get('x-request-id')).toBe('client-req-123');
    const replaced = await t.request('/v2/health', { headers: { 'x-request-id': 'bad id with spaces' } });
    expect(replaced.headers.get('x-request-id')).not.toBe('bad id with spaces');
    const error = await t.request('/v2/me');
    expect((await errorOf(error)).request_id).toBe(error.headers.get('x-request-id')!);
  });
});
