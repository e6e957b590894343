import { afterAll, beforeAll, beforeEach, describe, expect, test } from 'bun:test';
import Ajv2020 from 'ajv/dist/2020';
import type { AuditEvent } from '../../shared/audit/events.ts';
import type { Scope } from '../../shared/http/scopes.ts';
import { newId } from '../../shared/util/ids.ts';
import { PARTNER_STEAM_ID, PUBLIC_STEAM_ID, type SteamFake, startSteamFake } from '../fakes/steam/server.ts';
import { createTestApp, errorOf, signUp, type TestApp, workspaceWithKey } from '../helpers.ts';

/**
 * docs/design.md §11 connected accounts: connect → Steam sign-in (the Steam fake's OpenID provider) →
 * callback → listed; every forgery the callback must refuse creates no account; listing, disconnect
 * and isolation between workspaces; audit events with source gameplatform.
 */

let fake: SteamFake;
let t: TestApp;
const CLAIMED = 'https://steamcommunity.com/openid/id/';
const OTHER_STEAM_ID = '76561198000000042';

beforeAll(async () => {
  fake = await startSteamFake();
  t = createTestApp({ config: { STEAM_COMMUNITY_URL: fake.url, STEAM_API_URL: fake.url, STEAM_WEB_API_KEY: fake.apiKey } });
  await t.deps.ready();
});
afterAll(async () => {
  await t.close();
  await fake.stop();
});
beforeEach(() => {
  fake.openid.rejectAll(false);
  fake.openid.signInAs(PUBLIC_STEAM_ID);
});

type Started = { redirect_url: string; state: string; expires_at: string };
type Account = { account_id: number; steam_id: string; persona_name: string | null; connected_at: string; steam_token: { expires_at: string } | null };

const writer = (app: TestApp = t, scopes: Scope[] = ['accounts:write']) => workspaceWithKey(app, { scopes });

async function connect(headers: Record<string, string>, app: TestApp = t): Promise<Started> {
  const response = await app.request('/v2/gameplatform/accounts/connect', { method: 'POST', headers });
  expect(response.status).toBe(201);
  return (await response.json()) as Started;
}

/** The user signs in at Steam: the provider redirects back to our callback; returns its path and query. */
async function signIn(started: Started): Promise<string> {
  const response = await fetch(started.redirect_url, { redirect: 'manual' });
  expect(response.status).toBe(302);
  const location = new URL(response.headers.get('location')!);
  return `${location.pathname}${location.search}`;
}

const returnTo = (state: string) => `http://localhost/v2/gameplatform/openid/callback?state=${state}`;

/** Our callback reached with `params` appended to the return URL of `state`, as a provider redirect would. */
function callbackPath(state: string, params: Record<string, string>): string {
  const url = new URL(returnTo(state));
  for (const [key, value] of Object.entries(params)) url.searchParams.append(key, value);
  return `${url.pathname}${url.search}`;
}

const callback = (path: string, accept = 'application/json', app: TestApp = t) => app.request(path, { headers: { accept } });

async function accountsOf(key: string, app: TestApp = t, query = ''): Promise<{ data: Account[]; next_cursor: string | null }> {
  const response = await app.request(`/v2/gameplatform/accounts${query}`, { headers: { 'x-api-key': key } });
  expect(response.status).toBe(200);
  return (await response.json()) as { data: Account[]; next_cursor: string | null };
}

async function auditOf(key: string, query: string): Promise<AuditEvent[]> {
  const response = await t.request(`/v2/audit/events?${query}`, { headers: { 'x-api-key': key } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { data: AuditEvent[] }).data;
}

/** check_authentication calls the provider received (direct POSTs carry no query). */
const providerChecks = () => fake.requests.filter((request) => request.path === '/openid/login' && Object.keys(request.query).length === 0).length;

async function connectedAs(key: string, steamId: string): Promise<Account> {
  fake.openid.signInAs(steamId);
  const response = await callback(await signIn(await connect({ 'x-api-key': key })));
  expect(response.status).toBe(200);
  return (await response.json()) as Account;
}

describe('connect flow', () => {
  test('connect → Steam sign-in → callback connects the account, lists it and audits it with source gameplatform', async () => {
    const ws = await writer(t, ['accounts:write', 'audit:read']);
    const started = await connect(ws.keyHeaders);
    const redirect = new URL(started.redirect_url);
    expect(`${redirect.origin}${redirect.pathname}`).toBe(`${fake.url}/openid/login`);
    expect(Object.fromEntries(redirect.searchParams)).toEqual({
      'openid.ns': 'http://specs.openid.net/auth/2.0',
      'openid.mode': 'checkid_setup',
      'openid.return_to': returnTo(started.state),
      'openid.realm': 'http://localhost',
      'openid.identity': 'http://specs.openid.net/auth/2.0/identifier_select',
      'openid.claimed_id': 'http://specs.openid.net/auth/2.0/identifier_select',
    });
    expect(started.state).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const ttl = new Date(started.expires_at).getTime() - Date.now();
    expect(ttl).toBeGreaterThan(590_000);
    expect(ttl).toBeLessThanOrEqual(600_000);

    const checksBefore = providerChecks();
    const response = await callback(await signIn(started));
    expect(response.status).toBe(200);
    const account = (await response.json()) as Account;
    expect(account).toEqual({
      account_id: expect.any(Number),
      steam_id: PUBLIC_STEAM_ID,
      persona_name: 'fake public',
      connected_at: expect.any(String),
      steam_token: null,
    });
    expect(Number.isInteger(account.account_id)).toBe(true);
    expect(providerChecks()).toBe(checksBefore + 1);

    // The documented JSON body of the callback is what it answers.
    const document = (await (await t.request('/openapi.json')).json()) as {
      paths: Record<string, Record<string, { responses: Record<string, { content: Record<string, { schema: object }> }> }>>;
    };
    const schema = document.paths['/v2/gameplatform/openid/callback']!.get!.responses['200']!.content['application/json']!.schema;
    expect(new Ajv2020({ strict: false }).validate(schema, account)).toBe(true);

    expect((await accountsOf(ws.key)).data).toEqual([account]);
    const [event] = await auditOf(ws.key, 'event_type=account.connected');
    expect(event).toMatchObject({
      source: 'gameplatform',
      resource_type: 'gameplatform_account',
      resource_id: String(account.account_id),
      outcome: 'succeeded',
      actor: { type: 'api_key', id: ws.keyId },
      request_id: expect.any(String),
      metadata: { steam_id: PUBLIC_STEAM_ID, already_connected: false },
    });
  });

  test('a browser gets a page saying the account is connected', async () => {
    const ws = await writer();
    const response = await callback(await signIn(await connect(ws.keyHeaders)), 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8');
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toStartWith('text/html');
    expect(await response.text()).toContain('Steam account connected, you can close this window');
    expect((await accountsOf(ws.key)).data).toHaveLength(1);
  });

  test('an account session may start the flow instead of a key (actor: the account)', async () => {
    const ws = await writer(t, ['accounts:read', 'audit:read']);
    const started = await connect(ws.auth);
    const account = (await (await callback(await signIn(started))).json()) as Account;
    expect((await accountsOf(ws.key)).data.map((a) => a.account_id)).toEqual([account.account_id]);
    const [event] = await auditOf(ws.key, 'event_type=account.connected');
    expect(event!.actor).toEqual({ type: 'account', id: ws.account.id });
  });

  test('reconnecting the same Steam account returns the existing account; another Steam account is a second one', async () => {
    const ws = await writer();
    const first = await connectedAs(ws.key, PUBLIC_STEAM_ID);
    const again = await connectedAs(ws.key, PUBLIC_STEAM_ID);
    expect(again).toEqual(first);
    const partner = await connectedAs(ws.key, PARTNER_STEAM_ID);
    expect(partner.account_id).toBeGreaterThan(first.account_id);
    expect((await accountsOf(ws.key)).data.map((a) => a.steam_id)).toEqual([PARTNER_STEAM_ID, PUBLIC_STEAM_ID]);
  });

  test('without a Steam Web API key the account is connected with a null persona name', async () => {
    const noKey = createTestApp({ config: { STEAM_COMMUNITY_URL: fake.url, STEAM_API_URL: fake.url, STEAM_WEB_API_KEY: '' } });
    try {
      const ws = await writer(noKey);
      fake.openid.signInAs(OTHER_STEAM_ID);
      const response = await callback(await signIn(await connect(ws.keyHeaders, noKey)), 'application/json', noKey);
      expect(response.status).toBe(200);
      expect(((await response.json()) as Account).persona_name).toBeNull();
    } finally {
      await noKey.close();
    }
  });

  test('20 concurrent callbacks with one state connect exactly one account', async () => {
    const ws = await writer();
    const started = await connect(ws.keyHeaders);
    const path = callbackPath(started.state, fake.openid.positiveAssertion(returnTo(started.state), PUBLIC_STEAM_ID));
    const responses = await Promise.all(Array.from({ length: 20 }, () => callback(path)));
    const statuses = responses.map((response) => response.status).sort();
    expect(statuses).toEqual([200, ...Array<number>(19).fill(400)]);
    const [row] = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from gameplatform_accounts where workspace_id = ${ws.workspace.id}`;
    expect(row!.count).toBe(1);
  });
});

describe('forged or stale callbacks create no account', () => {
  /** Starts a flow, sends the callback `forge` builds for it, and expects 400 and no account. */
  async function refused(forge: (started: Started) => string | Promise<string>, options: { reason?: string; providerAsked?: boolean } = {}) {
    const ws = await writer(t, ['accounts:write', 'audit:read']);
    const started = await connect(ws.keyHeaders);
    const path = await forge(started);
    const checksBefore = providerChecks();
    const response = await callback(path);
    expect(response.status).toBe(400);
    expect((await errorOf(response)).code).toBe('invalid_openid_response');
    if (options.providerAsked !== undefined) expect(providerChecks() > checksBefore).toBe(options.providerAsked);
    const [row] = await t.deps.sql<{ count: number }[]>`select count(*)::int as count from gameplatform_accounts where workspace_id = ${ws.workspace.id}`;
    expect(row!.count).toBe(0);
    if (options.reason) {
      const rejected = await auditOf(ws.key, 'event_type=account.connected&outcome=rejected');
      expect(rejected.map((event) => [event.source, event.metadata.reason])).toContainEqual(['gameplatform', options.reason]);
    }
    return { ws, started };
  }
  const assertionFor = (started: Started, overrides?: Record<string, string>, steamId = PUBLIC_STEAM_ID) =>
    fake.openid.positiveAssertion(returnTo(started.state), steamId, overrides);

  test('a claimed_id changed after signing: the provider does not confirm it', async () => {
    await refused(
      (started) => {
        const forged = fake.openid.tamper(assertionFor(started), { claimed_id: `${CLAIMED}${PARTNER_STEAM_ID}`, identity: `${CLAIMED}${PARTNER_STEAM_ID}` });
        return callbackPath(started.state, forged);
      },
      { reason: 'signature_not_confirmed', providerAsked: true },
    );
  });

  test('a claimed_id on another host, even signed, is refused without asking the provider', async () => {
    const evil = `https://steamcommunity.com.evil.example/openid/id/${PUBLIC_STEAM_ID}`;
    await refused((started) => callbackPath(started.state, assertionFor(started, { claimed_id: evil, identity: evil })), {
      reason: 'malformed_claimed_id',
      providerAsked: false,
    });
  });

  test('a claimed_id that is not an individual SteamID64 is refused', async () => {
    const group = `${CLAIMED}103582791429521412`;
    await refused((started) => callbackPath(started.state, assertionFor(started, { claimed_id: group, identity: group })), {
      reason: 'malformed_claimed_id',
      providerAsked: false,
    });
  });

  test('identity different from claimed_id', async () => {
    await refused((started) => callbackPath(started.state, assertionFor(started, { identity: `${CLAIMED}${PARTNER_STEAM_ID}` })), {
      reason: 'identity_mismatch',
      providerAsked: false,
    });
  });

  test('another op_endpoint, even signed', async () => {
    await refused((started) => callbackPath(started.state, assertionFor(started, { op_endpoint: 'https://evil.example/openid/login' })), {
      reason: 'wrong_op_endpoint',
      providerAsked: false,
    });
  });

  test('a mode other than id_res', async () => {
    await refused((started) => callbackPath(started.state, { 'openid.ns': 'http://specs.openid.net/auth/2.0', 'openid.mode': 'cancel' }), {
      reason: 'wrong_mode',
      providerAsked: false,
    });
  });

  test('a return_to on another host', async () => {
    await refused(
      (started) =>
        callbackPath(
          started.state,
          fake.openid.positiveAssertion(`https://evil.example/v2/gameplatform/openid/callback?state=${started.state}`, PUBLIC_STEAM_ID),
        ),
      { reason: 'wrong_return_to', providerAsked: false },
    );
  });

  test("a return_to carrying another flow's state", async () => {
    const ws = await writer();
    const other = await connect(ws.keyHeaders);
    await refused((started) => callbackPath(started.state, fake.openid.positiveAssertion(returnTo(other.state), PUBLIC_STEAM_ID)), {
      reason: 'wrong_return_to',
      providerAsked: false,
    });
  });

  test('fewer signed fields than op_endpoint, claimed_id, identity, return_to, response_nonce, assoc_handle', async () => {
    await refused(
      (started) => callbackPath(started.state, assertionFor(started, { signed: 'signed,op_endpoint,claimed_id,identity,return_to,response_nonce' })),
      {
        reason: 'unsigned_fields',
        providerAsked: false,
      },
    );
  });

  test('a signed field that is missing from the response', async () => {
    await refused(
      (started) => {
        const { 'openid.assoc_handle': _dropped, ...rest } = assertionFor(started);
        return callbackPath(started.state, rest);
      },
      { reason: 'unsigned_fields', providerAsked: false },
    );
  });

  test('is_valid:false from the provider', async () => {
    fake.openid.rejectAll(true);
    await refused((started) => signIn(started), { reason: 'signature_not_confirmed', providerAsked: true });
  });

  test('a nonce seen before is refused even when the provider would still vouch for it', async () => {
    await refused(
      async (started) => {
        const params = assertionFor(started);
        await t.deps.sql`insert into openid_nonces (nonce, seen_at) values (${params['openid.response_nonce']!}, now())`;
        return callbackPath(started.state, params);
      },
      { reason: 'replayed_nonce', providerAsked: false },
    );
  });

  test("a nonce of an earlier sign-in, re-signed for a new flow's return URL", async () => {
    const ws = await writer();
    const first = await connect(ws.keyHeaders);
    const firstParams = fake.openid.positiveAssertion(returnTo(first.state), PUBLIC_STEAM_ID);
    expect((await callback(callbackPath(first.state, firstParams))).status).toBe(200);
    await refused((started) => callbackPath(started.state, assertionFor(started, { response_nonce: firstParams['openid.response_nonce']! })), {
      reason: 'replayed_nonce',
      providerAsked: false,
    });
  });

  test('an old nonce', async () => {
    await refused((started) => callbackPath(started.state, assertionFor(started, { response_nonce: '2020-01-01T00:00:00Zold' })), {
      reason: 'stale_nonce',
      providerAsked: false,
    });
  });

  test('a replayed callback: the state is single-use', async () => {
    const ws = await writer(t, ['accounts:write', 'audit:read']);
    const path = await signIn(await connect(ws.keyHeaders));
    expect((await callback(path)).status).toBe(200);
    const replay = await callback(path);
    expect(replay.status).toBe(400);
    expect((await errorOf(replay)).code).toBe('invalid_openid_response');
    expect((await accountsOf(ws.key)).data).toHaveLength(1);
    const rejected = await auditOf(ws.key, 'event_type=account.connected&outcome=rejected');
    expect(rejected[0]!.metadata.reason).toBe('unknown_or_used_state');
  });

  test('a fresh assertion for a used state', async () => {
    const ws = await writer();
    const started = await connect(ws.keyHeaders);
    expect((await callback(await signIn(started))).status).toBe(200);
    const again = await callback(callbackPath(started.state, fake.openid.positiveAssertion(returnTo(started.state), PARTNER_STEAM_ID)));
    expect(again.status).toBe(400);
    expect((await accountsOf(ws.key)).data.map((a) => a.steam_id)).toEqual([PUBLIC_STEAM_ID]);
  });

  test('an expired state', async () => {
    await refused(
      async (started) => {
        await t.deps.sql`update openid_states set expires_at = now() - interval '1 second' where state = ${started.state}`;
        return signIn(started);
      },
      { reason: 'expired_state', providerAsked: false },
    );
  });

  test('an unknown state, or none', async () => {
    const checksBefore = providerChecks();
    for (const path of [
      callbackPath('not-a-state', fake.openid.positiveAssertion(returnTo('not-a-state'), PUBLIC_STEAM_ID)),
      '/v2/gameplatform/openid/callback',
      '/v2/gameplatform/openid/callback?openid.mode=id_res',
    ]) {
      const response = await callback(path);
      expect(response.status).toBe(400);
      expect((await errorOf(response)).code).toBe('invalid_openid_response');
    }
    expect(providerChecks()).toBe(checksBefore);
  });

  test('a provider that fails or cannot be reached is a 503 upstream_unavailable, never a 500, and connects nothing', async () => {
    const ws = await writer();
    const path = await signIn(await connect(ws.keyHeaders));
    fake.failNext('openid', { status: 502 });
    const failed = await callback(path);
    expect(failed.status).toBe(503);
    expect((await errorOf(failed)).code).toBe('upstream_unavailable');

    // Nothing listens at the configured provider: the connection is refused.
    const closed = Bun.serve({ port: 0, fetch: () => new Response('') });
    const closedUrl = `http://127.0.0.1:${closed.port}`;
    await closed.stop(true);
    const unreachable = createTestApp({ config: { STEAM_COMMUNITY_URL: closedUrl, STEAM_WEB_API_KEY: '' } });
    try {
      const other = await writer(unreachable);
      const started = await connect(other.keyHeaders, unreachable);
      const params = fake.openid.positiveAssertion(returnTo(started.state), PUBLIC_STEAM_ID, { op_endpoint: `${closedUrl}/openid/login` });
      const response = await callback(callbackPath(started.state, params), 'application/json', unreachable);
      expect(response.status).toBe(503);
      expect((await errorOf(response)).code).toBe('upstream_unavailable');
    } finally {
      await unreachable.close();
    }
    expect((await accountsOf(ws.key)).data).toEqual([]);
  });
});

describe('keys, scopes and workspaces', () => {
  test('401 without credentials; 403 without accounts:write (recorded as rejected); accounts:read lists', async () => {
    const anonymous = await t.request('/v2/gameplatform/accounts/connect', { method: 'POST' });
    expect(anonymous.status).toBe(401);
    expect((await t.request('/v2/gameplatform/accounts')).status).toBe(401);
    expect((await t.request('/v2/gameplatform/accounts/1', { method: 'DELETE' })).status).toBe(401);
    expect((await t.request('/v2/gameplatform/accounts/connect', { method: 'POST', headers: { authorization: 'Bearer sess_nope' } })).status).toBe(401);

    const reader = await workspaceWithKey(t, { scopes: ['accounts:read', 'audit:read'] });
    const connectDenied = await t.request('/v2/gameplatform/accounts/connect', { method: 'POST', headers: reader.keyHeaders });
    expect(connectDenied.status).toBe(403);
    expect((await errorOf(connectDenied)).code).toBe('insufficient_scope');
    expect((await t.request('/v2/gameplatform/accounts/1', { method: 'DELETE', headers: reader.keyHeaders })).status).toBe(403);
    expect((await accountsOf(reader.key)).data).toEqual([]);
    const denied = await auditOf(reader.key, 'event_type=request.denied');
    expect(denied.map((event) => event.resource_id).sort()).toEqual(['gameplatform_accounts.connect', 'gameplatform_accounts.delete']);

    const defaults = await workspaceWithKey(t, { scopes: ['prices:read'] });
    expect((await t.request('/v2/gameplatform/accounts', { headers: defaults.keyHeaders })).status).toBe(403);
  });

  test('another workspace neither sees nor disconnects an account; its own listing is empty', async () => {
    const owner = await writer();
    const account = await connectedAs(owner.key, PUBLIC_STEAM_ID);
    const stranger = await writer();
    expect((await accountsOf(stranger.key)).data).toEqual([]);
    const response = await t.request(`/v2/gameplatform/accounts/${account.account_id}`, { method: 'DELETE', headers: stranger.keyHeaders });
    expect(response.status).toBe(404);
    expect((await accountsOf(owner.key)).data).toEqual([account]);
    // The same Steam account may be connected in both workspaces, each its own account.
    const theirs = await connectedAs(stranger.key, PUBLIC_STEAM_ID);
    expect(theirs.account_id).not.toBe(account.account_id);
  });

  test('a malformed account id is a 400 naming the parameter; an unknown one a 404', async () => {
    const ws = await writer();
    for (const id of ['abc', '0', '-1', '1.5', '01', '1e3', '9223372036854775808', '99999999999999999999', '%20']) {
      const response = await t.request(`/v2/gameplatform/accounts/${id}`, { method: 'DELETE', headers: ws.keyHeaders });
      expect({ id, status: response.status }).toEqual({ id, status: 400 });
      expect((await errorOf(response)).details?.[0]?.field).toBe('params.account_id');
    }
    const unknown = await t.request('/v2/gameplatform/accounts/9223372036854775807', { method: 'DELETE', headers: ws.keyHeaders });
    expect(unknown.status).toBe(404);
  });
});

describe('listing and disconnecting', () => {
  test('pages newest first with a signed cursor bound to the workspace', async () => {
    const ws = await writer();
    const ids = [PUBLIC_STEAM_ID, PARTNER_STEAM_ID, OTHER_STEAM_ID];
    for (const steamId of ids) await connectedAs(ws.key, steamId);
    const first = await accountsOf(ws.key, t, '?limit=2');
    expect(first.data.map((a) => a.steam_id)).toEqual([OTHER_STEAM_ID, PARTNER_STEAM_ID]);
    expect(first.next_cursor).toEqual(expect.any(String));
    const second = await accountsOf(ws.key, t, `?limit=2&cursor=${encodeURIComponent(first.next_cursor!)}`);
    expect(second).toEqual({ data: [expect.objectContaining({ steam_id: PUBLIC_STEAM_ID })], next_cursor: null });

    const other = await writer();
    const foreign = await t.request(`/v2/gameplatform/accounts?cursor=${encodeURIComponent(first.next_cursor!)}`, { headers: other.keyHeaders });
    expect(foreign.status).toBe(400);
    expect((await errorOf(foreign)).code).toBe('invalid_cursor');
    const tampered = await t.request(`/v2/gameplatform/accounts?cursor=${encodeURIComponent(`${first.next_cursor!}x`)}`, { headers: ws.keyHeaders });
    expect((await errorOf(tampered)).code).toBe('invalid_cursor');
    for (const limit of ['0', '101', 'x']) {
      expect((await t.request(`/v2/gameplatform/accounts?limit=${limit}`, { headers: ws.keyHeaders })).status).toBe(400);
    }
  });

  test('disconnect: 204, gone from the list, drafts cancelled and reservations released, audited; a second time 404', async () => {
    const ws = await writer(t, ['accounts:write', 'audit:read']);
    const account = await connectedAs(ws.key, PUBLIC_STEAM_ID);
    const draft = newId();
    const sent = newId();
    const now = new Date();
    const expires = new Date(now.getTime() + 86_400_000);
    for (const [id, state] of [
      [draft, 'draft'],
      [sent, 'cancelled'],
    ] as const) {
      await t.deps.sql`
        insert into trade_intents (id, workspace_id, account_id, kind, state, external_reference, give, valuation, expires_at, created_at, updated_at)
        values (${id}, ${ws.workspace.id}, ${account.account_id}, 'create_offer', ${state}, ${`ref-${id}`}, ${['1001']}, ${t.deps.sql.json({})}, ${expires}, ${now}, ${now})`;
    }
    await t.deps
      .sql`insert into trade_reservations (intent_id, steam_id, asset_id, expires_at) values (${draft}, ${PUBLIC_STEAM_ID}, ${`asset-${draft}`}, ${expires})`;

    const response = await t.request(`/v2/gameplatform/accounts/${account.account_id}`, { method: 'DELETE', headers: ws.keyHeaders });
    expect(response.status).toBe(204);
    expect((await accountsOf(ws.key)).data).toEqual([]);
    const intents = await t.deps.sql<{ id: string; state: string }[]>`select id, state from trade_intents where account_id = ${account.account_id} order by id`;
    expect(Object.fromEntries(intents.map((row) => [row.id, row.state]))).toEqual({ [draft]: 'cancelled', [sent]: 'cancelled' });
    const [reservation] = await t.deps.sql<{ released_at: Date | null }[]>`select released_at from trade_reservations where intent_id = ${draft}`;
    expect(reservation!.released_at).not.toBeNull();
    const [event] = await auditOf(ws.key, 'event_type=account.disconnected');
    expect(event).toMatchObject({
      source: 'gameplatform',
      resource_id: String(account.account_id),
      outcome: 'succeeded',
      actor: { type: 'api_key', id: ws.keyId },
    });

    expect((await t.request(`/v2/gameplatform/accounts/${account.account_id}`, { method: 'DELETE', headers: ws.keyHeaders })).status).toBe(404);
    // Connecting the Steam account again makes a new account.
    const again = await connectedAs(ws.key, PUBLIC_STEAM_ID);
    expect(again.account_id).toBeGreaterThan(account.account_id);
  });

  test('a session user can connect but listing needs a key', async () => {
    const user = await signUp(t);
    await connect(user.auth);
    expect((await t.request('/v2/gameplatform/accounts', { headers: user.auth })).status).toBe(401);
  });
});
