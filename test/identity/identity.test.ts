import { afterAll, describe, expect, test } from 'bun:test';
import { DEFAULT_SCOPES } from '../../shared/http/scopes.ts';
import { adminUpdateWorkspace } from '../../shared/identity/admin.ts';
import { sha256Hex } from '../../shared/util/crypto.ts';
import { createKey, createTestApp, errorOf, signUp, TEST_PASSWORD, testClock, uniqueEmail } from '../helpers.ts';

const clock = testClock();
const t = createTestApp({ now: clock.now });
afterAll(() => t.close());

const signIn = (email: string, password: string, ip = '198.51.100.7') =>
  t.request('/v1/sessions', { method: 'POST', headers: { 'x-forwarded-for': ip }, json: { email, password } });

describe('POST /v1/accounts', () => {
  test('creates an account, its workspace and a session (201)', async () => {
    const email = uniqueEmail('Signup');
    const response = await t.request('/v1/accounts', { method: 'POST', json: { email, password: TEST_PASSWORD, workspace_name: 'Skin shop' } });
    expect(response.status).toBe(201);
    const body = (await response.json()) as { account: { id: string; email: string }; workspace: unknown; session: { token: string; expires_at: string } };
    expect(body.account.email).toBe(email.toLowerCase());
    expect(body.workspace).toMatchObject({ name: 'Skin shop', tier: 'free' });
    expect(body.session.token).toStartWith('sess_');
    expect(Date.parse(body.session.expires_at)).toBeGreaterThan(clock.now().getTime());
    const [stored] = await t.deps.sql`select password_hash from accounts where id = ${body.account.id}`;
    expect(stored!.password_hash).toStartWith('$argon2id$');
    const [session] = await t.deps.sql`select token_hash from sessions where account_id = ${body.account.id}`;
    expect(session!.token_hash).toBe(sha256Hex(body.session.token));
  });

  test('refuses a taken email, whatever its case (409)', async () => {
    const user = await signUp(t);
    const response = await t.request('/v1/accounts', { method: 'POST', json: { email: user.email.toUpperCase(), password: TEST_PASSWORD } });
    expect(response.status).toBe(409);
    expect((await errorOf(response)).code).toBe('email_taken');
  });

  test('refuses a password under 10 characters and a malformed email (400)', async () => {
    const short = await t.request('/v1/accounts', { method: 'POST', json: { email: uniqueEmail(), password: '123456789' } });
    expect(short.status).toBe(400);
    const error = await errorOf(short);
    expect(error.code).toBe('invalid_request');
    expect(error.details?.[0]?.field).toBe('body.password');
    const badEmail = await t.request('/v1/accounts', { method: 'POST', json: { email: 'not-an-email', password: TEST_PASSWORD } });
    expect(badEmail.status).toBe(400);
    const missing = await t.request('/v1/accounts', { method: 'POST', json: {} });
    expect(missing.status).toBe(400);
  });
});

describe('POST /v1/sessions', () => {
  test('signs in with the right password (201) and refuses a wrong one or an unknown email (401)', async () => {
    const user = await signUp(t);
    const ok = await signIn(user.email, TEST_PASSWORD, '198.51.100.10');
    expect(ok.status).toBe(201);
    expect(((await ok.json()) as { session: { token: string } }).session.token).toStartWith('sess_');
    const wrong = await signIn(user.email, 'wrong password!!', '198.51.100.10');
    expect(wrong.status).toBe(401);
    expect((await errorOf(wrong)).code).toBe('invalid_credentials');
    const unknown = await signIn(uniqueEmail(), TEST_PASSWORD, '198.51.100.10');
    expect(unknown.status).toBe(401);
    expect((await errorOf(unknown)).message).toBe((await errorOf(await signIn(user.email, 'wrong password!!', '198.51.100.10'))).message);
  });

  test('locks an email after 5 failures, even for the right password, with Retry-After (429)', async () => {
    const user = await signUp(t);
    for (let attempt = 0; attempt < 5; attempt++) {
      const response = await signIn(user.email, `wrong-${attempt}-password`, `203.0.113.${attempt + 1}`);
      expect(response.status).toBe(401);
    }
    const locked = await signIn(user.email, TEST_PASSWORD, '203.0.113.99');
    expect(locked.status).toBe(429);
    expect((await errorOf(locked)).code).toBe('too_many_sign_in_attempts');
    const retryAfter = Number(locked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(15 * 60);
    // The failed attempts on a known account are audit events of its workspace.
    const [row] = await t.deps.sql`select count(*)::int as n from audit_events
      where workspace_id = ${user.workspace.id} and event_type = 'session.created' and outcome = 'rejected'`;
    expect(row!.n).toBe(5);
  });

  test('locks a client address after 20 failures across emails (429)', async () => {
    const ip = `192.0.2.${Math.floor(Math.random() * 200) + 20}`;
    for (let attempt = 0; attempt < 20; attempt++) {
      expect((await signIn(uniqueEmail(), 'whatever-password', ip)).status).toBe(401);
    }
    const user = await signUp(t);
    const locked = await signIn(user.email, TEST_PASSWORD, ip);
    expect(locked.status).toBe(429);
    expect(locked.headers.get('retry-after')).not.toBeNull();
    expect((await signIn(user.email, TEST_PASSWORD, '198.51.100.200')).status).toBe(201);
    // 22 argon2id verifications (unknown emails cost one too): ~3.5 s on a 2-core machine, near the default 5 s.
  }, 15_000);

  test('refuses a body without email or password (400)', async () => {
    expect((await t.request('/v1/sessions', { method: 'POST', json: { email: 'a@b.co' } })).status).toBe(400);
  });
});

describe('sessions', () => {
  test('DELETE /v1/sessions/current signs out (204) and the token stops working (401)', async () => {
    const user = await signUp(t);
    expect((await t.request('/v1/me/keys', { headers: user.auth })).status).toBe(200);
    expect((await t.request('/v1/sessions/current', { method: 'DELETE', headers: user.auth })).status).toBe(204);
    const after = await t.request('/v1/me/keys', { headers: user.auth });
    expect(after.status).toBe(401);
    expect((await t.request('/v1/sessions/current', { method: 'DELETE' })).status).toBe(401);
  });

  test('accepts the session as a cookie', async () => {
    const user = await signUp(t);
    const response = await t.request('/v1/me/keys', { headers: { cookie: `theme=dark; session=${user.token}` } });
    expect(response.status).toBe(200);
  });

  test('expires sessions after 12 hours (401)', async () => {
    const local = testClock('2026-05-01T00:00:00Z');
    const app = createTestApp({ now: local.now });
    try {
      const user = await signUp(app);
      expect((await app.request('/v1/me/keys', { headers: user.auth })).status).toBe(200);
      local.advance(12 * 3_600_000 + 1_000);
      const expired = await app.request('/v1/me/keys', { headers: user.auth });
      expect(expired.status).toBe(401);
      expect((await errorOf(expired)).code).toBe('unauthorized');
    } finally {
      await app.close();
    }
  });
});

describe('/v1/me/keys', () => {
  test('creates a key returned once, stored only as its SHA-256, with safe default scopes (201)', async () => {
    const user = await signUp(t);
    const created = await createKey(t, user.token, { label: 'Trading bot' });
    expect(created.key).toStartWith('cs2_');
    expect(created.prefix).toBe(created.key.slice(0, 12));
    expect(created.scopes).toEqual([...DEFAULT_SCOPES]);
    expect(created.label).toBe('Trading bot');
    const [row] = await t.deps.sql`select key_hash from api_keys where id = ${created.id}`;
    expect(row!.key_hash).toBe(sha256Hex(created.key));
    const listed = await t.request('/v1/me/keys', { headers: user.auth });
    expect(listed.status).toBe(200);
    const text = await listed.text();
    expect(text).not.toContain(created.key);
    expect(text).not.toContain(row!.key_hash);
    const body = JSON.parse(text);
    expect(body.keys).toHaveLength(1);
    expect(Object.keys(body.keys[0]).sort()).toEqual(['created_at', 'id', 'label', 'prefix', 'revoked_at', 'scopes']);
  });

  test('accepts no body at all and orders requested scopes stably', async () => {
    const user = await signUp(t);
    const bare = await t.request('/v1/me/keys', { method: 'POST', headers: user.auth });
    expect(bare.status).toBe(201);
    const chosen = await createKey(t, user.token, { scopes: ['usage:read', 'audit:read', 'catalog:read', 'audit:read'] });
    expect(chosen.scopes).toEqual(['catalog:read', 'audit:read', 'usage:read']);
  });

  test('validates label and scopes (400)', async () => {
    const user = await signUp(t);
    const post = (json: unknown) => t.request('/v1/me/keys', { method: 'POST', headers: user.auth, json });
    for (const body of [{ label: '' }, { label: 'x'.repeat(81) }, { scopes: ['prices:write'] }, { scopes: [] }, { scopes: 'audit:read' }, { extra: 1 }]) {
      const response = await post(body);
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_request');
    }
    const unknown = await errorOf(await post({ scopes: ['prices:write'] }));
    expect(JSON.stringify(unknown.details)).toContain('prices:write');
    expect((await post({ label: 'x'.repeat(80) })).status).toBe(201);
  });

  test('needs a session (401)', async () => {
    expect((await t.request('/v1/me/keys')).status).toBe(401);
    expect((await t.request('/v1/me/keys', { method: 'POST', json: {} })).status).toBe(401);
    expect((await t.request('/v1/me/keys', { headers: { authorization: 'Bearer sess_nope' } })).status).toBe(401);
  });

  test('revokes a key (204); the key then gets 401 and the revocation is audited', async () => {
    const user = await signUp(t);
    const created = await createKey(t, user.token);
    expect((await t.request('/v2/me', { headers: { 'x-api-key': created.key } })).status).toBe(200);
    const revoked = await t.request(`/v1/me/keys/${created.id}`, { method: 'DELETE', headers: user.auth });
    expect(revoked.status).toBe(204);
    const denied = await t.request('/v2/me', { headers: { 'x-api-key': created.key } });
    expect(denied.status).toBe(401);
    expect((await errorOf(denied)).message).toContain('revoked');
    const listed = (await (await t.request('/v1/me/keys', { headers: user.auth })).json()) as { keys: { revoked_at: string | null }[] };
    expect(listed.keys[0]!.revoked_at).not.toBeNull();
    const again = await t.request(`/v1/me/keys/${created.id}`, { method: 'DELETE', headers: user.auth });
    expect(again.status).toBe(404);
  });

  test("keeps workspaces apart: B can neither list nor revoke A's keys (404)", async () => {
    const a = await signUp(t);
    const b = await signUp(t);
    const keyOfA = await createKey(t, a.token);
    const listedByB = (await (await t.request('/v1/me/keys', { headers: b.auth })).json()) as { keys: unknown[] };
    expect(listedByB.keys).toEqual([]);
    const revokeByB = await t.request(`/v1/me/keys/${keyOfA.id}`, { method: 'DELETE', headers: b.auth });
    expect(revokeByB.status).toBe(404);
    expect((await t.request('/v2/me', { headers: { 'x-api-key': keyOfA.key } })).status).toBe(200);
    expect((await t.request('/v1/me/keys/not-a-uuid', { method: 'DELETE', headers: a.auth })).status).toBe(404);
  });
});

describe('GET /v2/me', () => {
  test('returns the workspace, tier and the key’s id, label, prefix and scopes (200)', async () => {
    const user = await signUp(t, { workspaceName: 'Inventory tracker' });
    const created = await createKey(t, user.token, { label: 'tracker', scopes: ['catalog:read'] });
    const response = await t.request('/v2/me', { headers: { 'x-api-key': created.key } });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({
      workspace: { id: user.workspace.id, name: 'Inventory tracker', tier: 'free' },
      key: { id: created.id, label: 'tracker', prefix: created.prefix, scopes: ['catalog:read'] },
    });
  });

  test('refuses a missing or unknown key (401)', async () => {
    expect((await t.request('/v2/me')).status).toBe(401);
    const unknown = await t.request('/v2/me', { headers: { 'x-api-key': 'cs2_definitely-not-a-key' } });
    expect(unknown.status).toBe(401);
    expect(unknown.headers.get('x-request-id')).toBeTruthy();
  });

  test('refuses keys of a suspended workspace (403)', async () => {
    const user = await signUp(t);
    await adminUpdateWorkspace(t.deps.sql, user.workspace.id, { suspended: true });
    const created = await createKey(t, user.token);
    const response = await t.request('/v2/me', { headers: { 'x-api-key': created.key } });
    expect(response.status).toBe(403);
    expect((await errorOf(response)).code).toBe('workspace_suspended');
  });
});
