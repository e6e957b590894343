import { afterAll, describe, expect, test } from 'bun:test';
import { createTestApp, errorOf, workspaceWithKey } from '../helpers.ts';

/**
 * Actions that take no input (issue 22's OpenAPI defects): they accept no body or `{}`, and refuse
 * any other body with a 400 instead of ignoring it; integer path parameters refuse anything but a
 * positive integer in range. The OpenAPI side is checked in test/http/openapi.test.ts's document walks.
 */
const t = createTestApp();
afterAll(() => t.close());

const unknownId = '00000000-0000-7000-8000-000000000001';
const refusedBodies: [string, string][] = [
  ['an array', '[]'],
  ['a string', '"str"'],
  ['a number', '42'],
  ['a boolean', 'true'],
  ['a populated object', '{"unexpected":1}'],
  ['deep nesting', `${'['.repeat(5_000)}${']'.repeat(5_000)}`],
  ['malformed JSON', '{"a":'],
];

async function actions() {
  const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'trade:write', 'webhooks:write'] });
  return [
    // [label, path, the status of an accepted (empty) body]
    ['connect', '/v2/gameplatform/accounts/connect', 201],
    ['cancel', `/v2/trade-intents/${unknownId}/cancel`, 404],
    ['webhook test', `/v2/webhooks/${unknownId}/test`, 404],
    // No WEBHOOK_SECRET_KEY in this app: past the body check, rotation is unavailable.
    ['rotate-secret', `/v2/webhooks/${unknownId}/rotate-secret`, 503],
    ['retry', `/v2/webhooks/${unknownId}/deliveries/${unknownId}/retry`, 404],
  ].map(([label, path, accepted]) => ({ label: label as string, path: path as string, accepted: accepted as number, headers: ws.keyHeaders }));
}

describe('actions without input', () => {
  test('accept no body and {}', async () => {
    for (const action of await actions()) {
      const none = await t.request(action.path, { method: 'POST', headers: action.headers });
      expect([action.label, none.status]).toEqual([action.label, action.accepted]);
      const empty = await t.request(action.path, { method: 'POST', headers: action.headers, json: {} });
      expect([action.label, empty.status]).toEqual([action.label, action.accepted]);
    }
  });

  test('refuse any other body with 400 and the shared error body', async () => {
    for (const action of await actions()) {
      for (const [name, body] of refusedBodies) {
        const response = await t.request(action.path, { method: 'POST', headers: { ...action.headers, 'content-type': 'application/json' }, body });
        expect([action.label, name, response.status]).toEqual([action.label, name, 400]);
        const error = await errorOf(response);
        // Bodies that are not JSON at all (or too deep to parse) are malformed_json, like on every route.
        expect(['invalid_request', 'malformed_json']).toContain(error.code);
        expect(error.request_id).toBeTruthy();
      }
    }
  });
});

describe('integer path parameters', () => {
  test('account_id and revision take positive integers in range; anything else is a 400', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'media:read'] });
    for (const value of ['0', '-1', '01', '1.5', '1e3', 'abc', '9223372036854775808', '99999999999999999999']) {
      const response = await t.request(`/v2/gameplatform/accounts/${encodeURIComponent(value)}`, { method: 'DELETE', headers: ws.keyHeaders });
      expect([value, response.status]).toEqual([value, 400]);
      expect((await errorOf(response)).code).toBe('invalid_request');
    }
    expect((await t.request('/v2/gameplatform/accounts/9223372036854775807', { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(404);
    for (const value of ['0', '2147483648', 'x']) {
      const response = await t.request(`/v2/scenes/${unknownId}/revisions/${value}`, { headers: ws.keyHeaders });
      expect([value, response.status]).toEqual([value, 400]);
    }
    expect((await t.request(`/v2/scenes/${unknownId}/revisions/2147483647`, { headers: ws.keyHeaders })).status).toBe(404);
  });
});
