import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { Writable } from 'node:stream';
import type { AuditEvent } from '../../shared/audit/events.ts';
import {
  checkSteamToken,
  dropToken,
  liveTokenFor,
  openSteamToken,
  rewrapSteamTokens,
  STEAM_TOKEN_MAX_LENGTH,
  sealSteamToken,
} from '../../shared/gameplatform/steam-token.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { SecretKeyring, secretKeyId } from '../../shared/webhooks/secrets.ts';
import { PUBLIC_STEAM_ID, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { createTestApp, errorOf, type TestApp, workspaceWithKey } from '../helpers.ts';

/**
 * Owner access tokens (issue 30, docs/design.md §17): PUT/DELETE …/steam-token through the API (every
 * status each lists), the account record showing only `expires_at`, the token destroyed with its
 * account or workspace, audit events without it, and the domain functions later readers use
 * (checkSteamToken, seal/open, liveTokenFor, dropToken). The token itself must never appear in an
 * answer, a log line, an audit event or Redis.
 */

const KEY_A = Buffer.alloc(32, 7);
const KEY_B = Buffer.alloc(32, 8);
const OTHER_STEAM_ID = '76561198000000042';
const HOUR = 3600;

let fake: SteamFake;
let t: TestApp;
let keyless: TestApp;
const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _encoding, done) {
    logLines.push(String(chunk));
    done();
  },
});
/** Every token a test sent, valid or not: none may show up anywhere the suite can look. */
const sentTokens: string[] = [];

beforeAll(async () => {
  fake = await startSteamFake();
  const config = { STEAM_COMMUNITY_URL: fake.url, STEAM_API_URL: fake.url, STEAM_WEB_API_KEY: fake.apiKey };
  t = createTestApp({ config: { ...config, WEBHOOK_SECRET_KEY: KEY_A.toString('base64') }, log: createLogger({ level: 'trace', name: 'test' }, sink) });
  keyless = createTestApp({ config, log: createLogger({ level: 'trace', name: 'test' }, sink) });
  await Promise.all([t.deps.ready(), keyless.deps.ready()]);
});
afterAll(async () => {
  await t.close();
  await keyless.close();
  await fake.stop();
});

const base64url = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A token shaped like Steam's webapi_token (EdDSA header, Steam's claims, an opaque signature). */
function steamJwt(claims: { sub?: unknown; exp?: unknown; [claim: string]: unknown }): string {
  const token = [
    base64url({ typ: 'JWT', alg: 'EdDSA' }),
    base64url({
      iss: 'r:0F8B_25F9B0E9_5C2A3',
      aud: ['web', 'renew', 'derive'],
      nbf: 1_700_000_000,
      iat: 1_700_000_000,
      jti: '0F8B_25F9B0E9_5C2A3',
      oat: 1_700_000_000,
      per: 1,
      ip_subject: '203.0.113.9',
      ip_confirmer: '203.0.113.9',
      ...claims,
    }),
    Buffer.from(`signature-${Math.random()}`).toString('base64url'),
  ].join('.');
  sentTokens.push(token);
  return token;
}
const inHours = (hours: number) => Math.floor(Date.now() / 1000) + hours * HOUR;
const validToken = (steamId = PUBLIC_STEAM_ID, hours = 24) => steamJwt({ sub: steamId, exp: inHours(hours) });

type Account = { account_id: number; steam_id: string; steam_token: { expires_at: string } | null };

/** Connects `steamId` through the Steam fake's OpenID sign-in, as gameplatform-accounts.test.ts does. */
async function connected(key: string, steamId = PUBLIC_STEAM_ID, app: TestApp = t): Promise<Account> {
  fake.openid.signInAs(steamId);
  const started = await app.request('/v2/gameplatform/accounts/connect', { method: 'POST', headers: { 'x-api-key': key } });
  expect(started.status).toBe(201);
  const redirect = await fetch(((await started.json()) as { redirect_url: string }).redirect_url, { redirect: 'manual' });
  const location = new URL(redirect.headers.get('location')!);
  const response = await app.request(`${location.pathname}${location.search}`, { headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return (await response.json()) as Account;
}

const putToken = (key: string, accountId: number | string, body: unknown, app: TestApp = t) =>
  app.request(`/v2/gameplatform/accounts/${accountId}/steam-token`, {
    method: 'PUT',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
const deleteToken = (key: string, accountId: number | string, app: TestApp = t) =>
  app.request(`/v2/gameplatform/accounts/${accountId}/steam-token`, { method: 'DELETE', headers: { 'x-api-key': key } });

async function listed(key: string): Promise<Account[]> {
  const response = await t.request('/v2/gameplatform/accounts', { headers: { 'x-api-key': key } });
  expect(response.status).toBe(200);
  const text = await response.text();
  for (const token of sentTokens) expect(text).not.toContain(token);
  return (JSON.parse(text) as { data: Account[] }).data;
}

async function auditOf(key: string, eventType: string): Promise<AuditEvent[]> {
  const response = await t.request(`/v2/audit/events?event_type=${eventType}`, { headers: { 'x-api-key': key } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: AuditEvent[] }).data;
}

const storedTokens = async (accountId: number) =>
  Number((await t.deps.sql<{ count: string }[]>`select count(*)::text as count from gameplatform_steam_tokens where account_id = ${accountId}`)[0]!.count);

/** An error answer: its status, the shared body, and no trace of any token sent. */
async function refused(response: Response, status: number): Promise<{ code: string; details?: { field: string; message: string; code?: string }[] }> {
  const text = await response.clone().text();
  expect({ status: response.status, text: text.slice(0, 300) }).toEqual({ status, text: text.slice(0, 300) });
  for (const token of sentTokens) expect(text).not.toContain(token);
  const error = await errorOf(response);
  expect(error.request_id).toBe(response.headers.get('x-request-id')!);
  return error;
}

describe('checkSteamToken (no signature check: Steam signs with its own key)', () => {
  const now = new Date();
  test('a JWT whose sub is the SteamID64 and whose exp is ahead: its expiry', () => {
    const exp = inHours(2);
    expect(checkSteamToken(steamJwt({ sub: PUBLIC_STEAM_ID, exp }), PUBLIC_STEAM_ID, now)).toEqual({ ok: true, expiresAt: new Date(exp * 1000) });
  });

  test('wrong sub, expired, and every malformed shape are rejections, never throws', () => {
    const [header, payload, signature] = validToken().split('.') as [string, string, string];
    const malformed = [
      undefined,
      null,
      42,
      {},
      '',
      'not-a-jwt',
      `${header}.${payload}`,
      `${header}.${payload}.${signature}.x`,
      `${header}.${payload}.`,
      `${header}==.${payload}.${signature}`,
      `${header}.${payload}.${signature}\u0000`,
      `${header}.\ud800.${signature}`,
      `${header}.${payload}.sig\udfff`,
      `a`.repeat(1024 * 1024),
      `${header}.${'A'.repeat(STEAM_TOKEN_MAX_LENGTH)}.${signature}`,
      `${base64url('not an object')}.${payload}.${signature}`,
      `${Buffer.from('{').toString('base64url')}.${payload}.${signature}`,
      `${header}.${base64url([1, 2])}.${signature}`,
      `${header}.${Buffer.from([0xff, 0xfe]).toString('base64url')}.${signature}`,
      steamJwt({ sub: PUBLIC_STEAM_ID, exp: String(inHours(1)) }),
      steamJwt({ sub: PUBLIC_STEAM_ID, exp: undefined }),
      steamJwt({ sub: PUBLIC_STEAM_ID, exp: 1e300 }),
    ];
    for (const token of malformed) expect(checkSteamToken(token, PUBLIC_STEAM_ID, now)).toEqual({ ok: false, reason: 'malformed' });
    expect(checkSteamToken(validToken(OTHER_STEAM_ID), PUBLIC_STEAM_ID, now)).toEqual({ ok: false, reason: 'wrong_subject' });
    expect(checkSteamToken(steamJwt({ sub: Number(PUBLIC_STEAM_ID), exp: inHours(1) }), PUBLIC_STEAM_ID, now)).toEqual({ ok: false, reason: 'wrong_subject' });
    expect(checkSteamToken(steamJwt({ sub: PUBLIC_STEAM_ID, exp: Math.floor(now.getTime() / 1000) }), PUBLIC_STEAM_ID, now)).toEqual({
      ok: false,
      reason: 'expired',
    });
  });
});

describe('sealing', () => {
  test('opens only for the account it was sealed for, under the key that sealed it or a previous one', () => {
    const token = validToken();
    const sealed = sealSteamToken(new SecretKeyring(KEY_A), '41', token);
    expect(sealed.ciphertext.includes(Buffer.from(token))).toBe(false);
    expect(openSteamToken(new SecretKeyring(KEY_A), '41', sealed.ciphertext, sealed.keyId)).toBe(token);
    expect(openSteamToken(new SecretKeyring(KEY_B, [KEY_A]), '41', sealed.ciphertext, sealed.keyId)).toBe(token);
    expect(() => openSteamToken(new SecretKeyring(KEY_A), '42', sealed.ciphertext, sealed.keyId)).toThrow();
    // Webhook secrets share the keys but not the binding.
    expect(() => new SecretKeyring(KEY_A).open('41', sealed.ciphertext, sealed.keyId)).toThrow();
    expect(() => openSteamToken(new SecretKeyring(KEY_B), '41', sealed.ciphertext, sealed.keyId)).toThrow();
  });
});

describe('PUT …/steam-token', () => {
  test('stores the token sealed: 200 with steam_token.expires_at, listed the same, audited as set then replaced, never the token', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'accounts:read', 'audit:read'] });
    const account = await connected(ws.key);
    expect(account.steam_token).toBeNull();
    const exp = inHours(20);
    const token = steamJwt({ sub: PUBLIC_STEAM_ID, exp });
    const response = await putToken(ws.key, account.account_id, { token });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain(token);
    const expiresAt = new Date(exp * 1000).toISOString();
    expect(JSON.parse(text)).toMatchObject({ account_id: account.account_id, steam_id: PUBLIC_STEAM_ID, steam_token: { expires_at: expiresAt } });
    expect((await listed(ws.key)).map((row) => row.steam_token)).toEqual([{ expires_at: expiresAt }]);

    const [row] = await t.deps.sql<
      { ciphertext: Uint8Array; key_id: string }[]
    >`select ciphertext, key_id from gameplatform_steam_tokens where account_id = ${account.account_id}`;
    expect(Buffer.from(row!.ciphertext).includes(Buffer.from(token))).toBe(false);
    expect(openSteamToken(new SecretKeyring(KEY_A), String(account.account_id), row!.ciphertext, row!.key_id)).toBe(token);

    const replacement = validToken(PUBLIC_STEAM_ID, 30);
    expect((await putToken(ws.key, account.account_id, { token: replacement })).status).toBe(200);
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_A), String(account.account_id), new Date())).toBe(replacement);

    const [set] = await auditOf(ws.key, 'steam_token.set');
    const [replaced] = await auditOf(ws.key, 'steam_token.replaced');
    for (const event of [set, replaced]) {
      expect(event).toMatchObject({
        source: 'gameplatform',
        resource_type: 'gameplatform_account',
        resource_id: String(account.account_id),
        outcome: 'succeeded',
        actor: { type: 'api_key', id: ws.keyId },
      });
      expect(Object.keys(event!.metadata).sort()).toEqual(['expires_at', 'key_id', 'steam_id']);
    }
    expect(set!.metadata.expires_at).toBe(expiresAt);
    expect(set!.request_id).toBe(response.headers.get('x-request-id'));
  });

  test('every kind of bad token is a 400 invalid_steam_token with the shared body, never echoed, and nothing stored', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'accounts:read'] });
    const account = await connected(ws.key);
    const [header, payload, signature] = validToken().split('.') as [string, string, string];
    const cases: [string, string, string][] = [
      ['not a JWT', JSON.stringify({ token: 'hunter2-not-a-jwt' }), 'malformed'],
      ['two parts', JSON.stringify({ token: `${header}.${payload}` }), 'malformed'],
      ['payload not JSON', JSON.stringify({ token: `${header}.${Buffer.from('sub=1').toString('base64url')}.${signature}` }), 'malformed'],
      ['wrong sub', JSON.stringify({ token: validToken(OTHER_STEAM_ID) }), 'wrong_subject'],
      ['expired', JSON.stringify({ token: steamJwt({ sub: PUBLIC_STEAM_ID, exp: inHours(-1) }) }), 'expired'],
      ['no exp', JSON.stringify({ token: steamJwt({ sub: PUBLIC_STEAM_ID }) }), 'malformed'],
      ['a 1 MB token', JSON.stringify({ token: `${header}.${'A'.repeat(1_000_000)}.${signature}` }), 'malformed'],
      ['NUL bytes', JSON.stringify({ token: `${header}.${payload}.${signature}\u0000` }), 'malformed'],
      ['a lone surrogate', `{"token":"${header}.${payload}.\\ud800${signature}"}`, 'malformed'],
      ['a lone low surrogate', `{"token":"${header}\\udfff.${payload}.${signature}"}`, 'malformed'],
    ];
    for (const [name, body, reason] of cases) {
      const error = await refused(await putToken(ws.key, account.account_id, body), 400);
      expect({ name, code: error.code, detail: error.details?.[0]?.code }).toEqual({ name, code: 'invalid_steam_token', detail: reason });
    }
    // Not the token's value but the body's shape: the shared invalid_request.
    for (const body of [{}, { token: 42 }, { token: validToken(), extra: true }, [validToken()]]) {
      expect((await refused(await putToken(ws.key, account.account_id, body), 400)).code).toBe('invalid_request');
    }
    expect((await refused(await putToken(ws.key, account.account_id, '{"token":'), 400)).code).toBe('malformed_json');
    expect((await refused(await putToken(ws.key, account.account_id, { token: 'A'.repeat(1024 * 1024) }), 413)).code).toBe('payload_too_large');
    expect(await storedTokens(account.account_id)).toBe(0);
    expect((await listed(ws.key))[0]!.steam_token).toBeNull();
  });

  test("401 without a key; 403 with accounts:read only; 404 for an unknown account, another workspace's, a disconnected one", async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write'] });
    const reader = await workspaceWithKey(t, { scopes: ['accounts:read'] });
    const other = await workspaceWithKey(t, { scopes: ['accounts:write'] });
    const account = await connected(ws.key);
    const body = JSON.stringify({ token: validToken() });
    const anonymous = await t.request(`/v2/gameplatform/accounts/${account.account_id}/steam-token`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body,
    });
    expect((await refused(anonymous, 401)).code).toBe('unauthorized');
    expect((await refused(await putToken(reader.key, account.account_id, body), 403)).code).toBe('insufficient_scope');
    expect((await refused(await putToken(other.key, account.account_id, body), 404)).code).toBe('not_found');
    expect((await refused(await putToken(ws.key, 9_000_000_000, body), 404)).code).toBe('not_found');
    expect((await refused(await putToken(ws.key, 'abc', body), 400)).code).toBe('invalid_request');
    expect(await storedTokens(account.account_id)).toBe(0);
    expect((await t.request(`/v2/gameplatform/accounts/${account.account_id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);
    expect((await refused(await putToken(ws.key, account.account_id, body), 404)).code).toBe('not_found');
  });

  test('503 secret_storage_unavailable without WEBHOOK_SECRET_KEY, nothing stored; DELETE still answers', async () => {
    const ws = await workspaceWithKey(keyless, { scopes: ['accounts:write'] });
    const account = await connected(ws.key, PUBLIC_STEAM_ID, keyless);
    expect((await refused(await putToken(ws.key, account.account_id, { token: validToken() }, keyless), 503)).code).toBe('secret_storage_unavailable');
    expect(await storedTokens(account.account_id)).toBe(0);
    expect((await deleteToken(ws.key, account.account_id, keyless)).status).toBe(204);
  });
});

describe('DELETE …/steam-token and what destroys a token', () => {
  test('204 removes it (audited as removed); 204 again with none set and no event; 404 for another workspace; 401 and 403', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'accounts:read', 'audit:read'] });
    const other = await workspaceWithKey(t, { scopes: ['accounts:write'] });
    const reader = await workspaceWithKey(t, { scopes: ['accounts:read'] });
    const account = await connected(ws.key);
    expect((await putToken(ws.key, account.account_id, { token: validToken() })).status).toBe(200);

    expect((await refused(await deleteToken(other.key, account.account_id), 404)).code).toBe('not_found');
    expect((await refused(await deleteToken(reader.key, account.account_id), 403)).code).toBe('insufficient_scope');
    const anonymous = await t.request(`/v2/gameplatform/accounts/${account.account_id}/steam-token`, { method: 'DELETE' });
    expect((await refused(anonymous, 401)).code).toBe('unauthorized');
    expect(await storedTokens(account.account_id)).toBe(1);

    expect((await deleteToken(ws.key, account.account_id)).status).toBe(204);
    expect(await storedTokens(account.account_id)).toBe(0);
    expect((await listed(ws.key))[0]!.steam_token).toBeNull();
    expect((await deleteToken(ws.key, account.account_id)).status).toBe(204);
    const removed = await auditOf(ws.key, 'steam_token.removed');
    expect(removed).toHaveLength(1);
    expect(removed[0]).toMatchObject({
      source: 'gameplatform',
      resource_id: String(account.account_id),
      outcome: 'succeeded',
      metadata: { steam_id: PUBLIC_STEAM_ID },
    });
    expect((await refused(await deleteToken(ws.key, 9_000_000_000), 404)).code).toBe('not_found');
  });

  test("disconnecting the account destroys its token; deleting the workspace destroys its accounts' tokens", async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'audit:read'] });
    const first = await connected(ws.key);
    const second = await connected(ws.key, OTHER_STEAM_ID);
    for (const [account, steamId] of [
      [first, PUBLIC_STEAM_ID],
      [second, OTHER_STEAM_ID],
    ] as const) {
      expect((await putToken(ws.key, account.account_id, { token: validToken(steamId) })).status).toBe(200);
    }
    expect((await t.request(`/v2/gameplatform/accounts/${first.account_id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);
    expect(await storedTokens(first.account_id)).toBe(0);
    expect(await storedTokens(second.account_id)).toBe(1);
    const [disconnected] = await auditOf(ws.key, 'account.disconnected');
    expect(disconnected!.metadata.steam_access_destroyed).toBe(true);
    // A reconnect is a new connection, without the old token.
    expect((await connected(ws.key)).steam_token).toBeNull();

    // No operation deletes a workspace (neither the API nor the admin CLI): an operator deletes the
    // rows that do not cascade (users, sessions, keys, audit events), then the workspace, whose
    // connected accounts and their tokens go with it.
    await t.deps.sql.begin(async (tx) => {
      await tx`delete from sessions where account_id in (select id from accounts where workspace_id = ${ws.workspace.id})`;
      await tx`delete from audit_events where workspace_id = ${ws.workspace.id}`;
      await tx`delete from api_keys where workspace_id = ${ws.workspace.id}`;
      await tx`delete from accounts where workspace_id = ${ws.workspace.id}`;
      await tx`delete from workspaces where id = ${ws.workspace.id}`;
    });
    expect(await storedTokens(second.account_id)).toBe(0);
  });
});

describe('liveTokenFor and dropToken (what the token reads use)', () => {
  test('the plaintext while it lives; null with none, after a disconnect, or under a key no longer configured (kept)', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write'] });
    const account = await connected(ws.key);
    const id = String(account.account_id);
    const keyring = new SecretKeyring(KEY_A);
    expect(await liveTokenFor(t.deps.sql, keyring, id, new Date())).toBeNull();
    const token = validToken();
    expect((await putToken(ws.key, id, { token })).status).toBe(200);
    expect(await liveTokenFor(t.deps.sql, keyring, id, new Date())).toBe(token);
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_B, [KEY_A]), id, new Date())).toBe(token);
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_B), id, new Date())).toBeNull();
    expect(await storedTokens(account.account_id)).toBe(1);
    expect(await liveTokenFor(t.deps.sql, keyring, '9000000000', new Date())).toBeNull();
    expect((await t.request(`/v2/gameplatform/accounts/${id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(204);
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_B, [KEY_A]), id, new Date())).toBeNull();
  });

  test('an expired token is dropped when read: null, deleted, steam_token.dropped (reason expired) by the system', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'audit:read'] });
    const account = await connected(ws.key);
    const exp = inHours(1);
    expect((await putToken(ws.key, account.account_id, { token: steamJwt({ sub: PUBLIC_STEAM_ID, exp }) })).status).toBe(200);
    const later = new Date(exp * 1000 + 1000);
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_A), String(account.account_id), later)).toBeNull();
    expect(await storedTokens(account.account_id)).toBe(0);
    const [dropped] = await auditOf(ws.key, 'steam_token.dropped');
    expect(dropped).toMatchObject({
      source: 'gameplatform',
      resource_type: 'gameplatform_account',
      resource_id: String(account.account_id),
      outcome: 'succeeded',
      actor: { type: 'system', id: null },
      occurred_at: later.toISOString(),
      metadata: { steam_id: PUBLIC_STEAM_ID, reason: 'expired', expires_at: new Date(exp * 1000).toISOString() },
    });
  });

  test('dropToken (Steam refused it): deleted and audited once; a second drop finds nothing; an altered ciphertext is dropped as unreadable', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'audit:read'] });
    const account = await connected(ws.key);
    const id = String(account.account_id);
    expect((await putToken(ws.key, id, { token: validToken() })).status).toBe(200);
    expect(await dropToken(t.deps.sql, id, 'refused')).toBe(true);
    expect(await dropToken(t.deps.sql, id, 'refused')).toBe(false);
    expect((await auditOf(ws.key, 'steam_token.dropped')).map((event) => event.metadata.reason)).toEqual(['refused']);

    expect((await putToken(ws.key, id, { token: validToken() })).status).toBe(200);
    await t.deps
      .sql`update gameplatform_steam_tokens set ciphertext = set_byte(ciphertext, 20, (get_byte(ciphertext, 20) + 1) % 256) where account_id = ${id}::bigint`;
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_A), id, new Date())).toBeNull();
    expect((await auditOf(ws.key, 'steam_token.dropped')).map((event) => event.metadata.reason)).toEqual(['unreadable', 'refused']);
  });
});

describe('key rotation (npm run admin -- rewrap-webhook-secrets rewraps tokens too)', () => {
  test('tokens under a previous key are sealed again under the current one and audited; keys not configured are reported, tokens untouched', async () => {
    const ws = await workspaceWithKey(t, { scopes: ['accounts:write', 'audit:read'] });
    const account = await connected(ws.key);
    const id = String(account.account_id);
    const token = validToken();
    expect((await putToken(ws.key, id, { token })).status).toBe(200);
    const actor = { type: 'admin' as const, id: 'test' };
    // The database is shared with other suites, whose tokens are sealed under their own keys: those are
    // reported unreadable here (their keys are not in this keyring), never touched; only ours is judged.
    const ours = (report: { unreadable: { account_id: string }[] }) => report.unreadable.filter((entry) => entry.account_id === id);
    const first = await rewrapSteamTokens(t.deps.sql, new SecretKeyring(KEY_B, [KEY_A]), actor, 2);
    expect(ours(first)).toEqual([]);
    expect(first.rewrapped).toBeGreaterThanOrEqual(1);
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_B), id, new Date())).toBe(token);
    const second = await rewrapSteamTokens(t.deps.sql, new SecretKeyring(KEY_B, [KEY_A]), actor);
    expect({ rewrapped: second.rewrapped, unreadable: ours(second) }).toEqual({ rewrapped: 0, unreadable: [] });
    const [event] = await auditOf(ws.key, 'steam_token.rewrapped');
    expect(event).toMatchObject({
      resource_id: id,
      actor: { type: 'admin', id: 'test' },
      metadata: { from_key_id: secretKeyId(KEY_A), to_key_id: secretKeyId(KEY_B) },
    });

    const report = await rewrapSteamTokens(t.deps.sql, new SecretKeyring(Buffer.alloc(32, 9)), actor);
    expect(report.unreadable).toContainEqual({ account_id: id, key_id: secretKeyId(KEY_B) });
    expect(await liveTokenFor(t.deps.sql, new SecretKeyring(KEY_B), id, new Date())).toBe(token);
  });
});

describe('the token is nowhere else', () => {
  test('no token sent in this suite is in a log line, an audit event, or Redis', async () => {
    expect(sentTokens.length).toBeGreaterThan(20);
    expect(logLines.length).toBeGreaterThan(0);
    const logs = logLines.join('');
    const audit = JSON.stringify(await t.deps.sql`select metadata from audit_events where source = 'gameplatform'`);
    const redisText: string[] = [];
    // This run's job queues (payloads, results, events); usage counters hold numbers only.
    for (const key of await t.deps.redis.keys(`${t.deps.config.QUEUE_PREFIX}:*`)) {
      const type = await t.deps.redis.type(key);
      if (type === 'string') redisText.push((await t.deps.redis.getBuffer(key))?.toString('latin1') ?? '');
      else if (type === 'hash') redisText.push(JSON.stringify(await t.deps.redis.hgetall(key)));
      else if (type === 'list') redisText.push(JSON.stringify(await t.deps.redis.lrange(key, 0, -1)));
      else if (type === 'zset') redisText.push(JSON.stringify(await t.deps.redis.zrange(key, '0', '-1')));
      else if (type === 'stream') redisText.push(JSON.stringify(await t.deps.redis.xrange(key, '-', '+')));
      else if (type === 'set') redisText.push(JSON.stringify(await t.deps.redis.smembers(key)));
    }
    const redis = redisText.join('\n');
    for (const token of sentTokens) {
      // The signature part is unique per token; whole tokens and their signatures are both absent.
      const signature = token.split('.')[2]!;
      for (const [where, text] of [
        ['logs', logs],
        ['audit', audit],
        ['redis', redis],
      ] as const) {
        expect({ where, found: text.includes(token) || text.includes(signature) }).toEqual({ where, found: false });
      }
    }
  });
});
