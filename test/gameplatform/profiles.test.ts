import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { FRIENDS_ONLY_STEAM_ID, PRIVATE_STEAM_ID, PUBLIC_STEAM_ID, type SteamFake, startSteamFake, UNKNOWN_STEAM_ID } from '../fakes/steam/server.ts';
import { createTestApp, errorOf, scratchTestApp, type TestApp, testClock, workspaceWithKey } from '../helpers.ts';

/** GET /v2/profiles/{gameplatform_id} (docs/design.md §11) over real Postgres and Redis, Steam played by the fake. */

const clock = testClock();
let fake: SteamFake;
let t: TestApp;
let key: string;
const TTL_MS = 600_000;

beforeAll(async () => {
  fake = await startSteamFake();
  t = await scratchTestApp({
    tag: 'profiles',
    now: clock.now,
    config: { STEAM_API_URL: fake.url, STEAM_COMMUNITY_URL: fake.url, STEAM_WEB_API_KEY: fake.apiKey },
  });
  key = (await workspaceWithKey(t, { tier: 'pro' })).key;
}, 30_000);

afterAll(async () => {
  await t?.close();
  await fake?.stop();
});

const profileCalls = () => fake.requests.filter((request) => request.path.includes('GetPlayerSummaries')).length;
const get = (id: string, apiKey: string | null = key, app: TestApp = t) =>
  app.request(`/v2/profiles/${encodeURIComponent(id)}`, { headers: apiKey ? { 'x-api-key': apiKey } : {} });

type Profile = Record<string, unknown> & { fetched_at: string; stale: boolean };

describe('GET /v2/profiles/{gameplatform_id}', () => {
  test('answers a public profile with the three id notations, Steam fields renamed, source and freshness', async () => {
    const response = await get(PUBLIC_STEAM_ID);
    expect(response.status).toBe(200);
    const body = (await response.json()) as Profile;
    expect(body).toEqual({
      steam_id: PUBLIC_STEAM_ID,
      steam_id2: 'STEAM_0:0:26039975',
      steam_id3: '[U:1:52079950]',
      persona_name: 'fake public',
      profile_url: `https://steamcommunity.com/profiles/${PUBLIC_STEAM_ID}/`,
      avatar_url: 'https://avatars.steamstatic.com/fef49e7fa7e1997310d705b2a6158ff8dc1cdfeb_full.jpg',
      visibility: 'public',
      country_code: 'DE',
      created_at: '2010-01-01T00:00:00.000Z',
      last_logoff: new Date(1763880000 * 1000).toISOString(),
      source: 'gameplatform',
      fetched_at: clock.now().toISOString(),
      stale: false,
    });
  });

  test('SteamID2 and SteamID3 name the same account as its SteamID64', async () => {
    for (const id of ['STEAM_0:0:26039975', 'STEAM_1:0:26039975', '[U:1:52079950]']) {
      const response = await get(id);
      expect(response.status).toBe(200);
      expect(((await response.json()) as Profile).steam_id).toBe(PUBLIC_STEAM_ID);
    }
  });

  test('maps communityvisibilitystate 1 to private and 2 to friends_only, with Steam’s hidden fields null', async () => {
    const privateBody = (await (await get(PRIVATE_STEAM_ID)).json()) as Profile;
    expect(privateBody.visibility).toBe('private');
    expect(privateBody.created_at).toBeNull();
    expect(privateBody.country_code).toBeNull();
    expect(((await (await get(FRIENDS_ONLY_STEAM_ID)).json()) as Profile).visibility).toBe('friends_only');
  });

  test('serves the cached copy within PROFILE_TTL_SECONDS without calling Steam, then fetches again', async () => {
    fake.setProfile(PUBLIC_STEAM_ID, { personaname: 'renamed' });
    await get(PUBLIC_STEAM_ID);
    const before = profileCalls();
    const cached = (await (await get(PUBLIC_STEAM_ID)).json()) as Profile;
    expect(profileCalls()).toBe(before);
    clock.advance(TTL_MS + 1_000);
    const fresh = (await (await get(PUBLIC_STEAM_ID)).json()) as Profile;
    expect(profileCalls()).toBe(before + 1);
    expect(fresh.persona_name).toBe('renamed');
    expect(fresh.fetched_at).toBe(clock.now().toISOString());
    expect(new Date(fresh.fetched_at).getTime()).toBeGreaterThan(new Date(cached.fetched_at).getTime());
  });

  test('serves an expired cached copy with stale: true when Steam fails (5xx, then 429)', async () => {
    await get(FRIENDS_ONLY_STEAM_ID);
    clock.advance(TTL_MS + 1_000);
    for (const status of [500, 429]) {
      fake.failNext('profiles', { status, retryAfter: 30 });
      const response = await get(FRIENDS_ONLY_STEAM_ID);
      expect(response.status).toBe(200);
      const body = (await response.json()) as Profile;
      expect(body.stale).toBe(true);
      expect(new Date(body.fetched_at).getTime()).toBeLessThan(clock.now().getTime() - TTL_MS);
    }
  });

  test('answers 503 upstream_unavailable with the upstream Retry-After when Steam fails and nothing is cached', async () => {
    fake.setProfile('76561198000000123', { personaname: 'never fetched' });
    fake.failNext('profiles', { status: 429, retryAfter: 42 });
    const throttled = await get('76561198000000123');
    expect(throttled.status).toBe(503);
    expect(throttled.headers.get('retry-after')).toBe('42');
    expect((await errorOf(throttled)).code).toBe('upstream_unavailable');
    fake.failNext('profiles', { status: 502 });
    const failed = await get('76561198000000123');
    expect(failed.status).toBe(503);
    expect(Number(failed.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  test('answers 404 profile_not_found when players is empty', async () => {
    const response = await get(UNKNOWN_STEAM_ID);
    expect(response.status).toBe(404);
    expect((await errorOf(response)).code).toBe('profile_not_found');
  });

  test('answers 400 invalid_gameplatform_id for vanity names, groups and malformed ids, before any upstream call', async () => {
    const before = fake.requests.length;
    for (const id of ['gaben', '[g:1:4]', '103582791429521408', 'STEAM_0:2:1', '7656119801234567', '76561198012345678 ', '0']) {
      const response = await get(id);
      expect(response.status).toBe(400);
      const error = await errorOf(response);
      expect(error.code).toBe('invalid_gameplatform_id');
      expect(error.details?.[0]?.field).toBe('params.gameplatform_id');
    }
    expect(fake.requests.length).toBe(before);
  });

  test('answers 401 without a key and 403 without profiles:read', async () => {
    expect((await get(PUBLIC_STEAM_ID, null)).status).toBe(401);
    const inventoryOnly = await workspaceWithKey(t, { scopes: ['inventory:read'] });
    const response = await get(PUBLIC_STEAM_ID, inventoryOnly.key);
    expect(response.status).toBe(403);
    expect((await errorOf(response)).code).toBe('insufficient_scope');
  });

  test('never answers 500 for garbage from Steam: HTML, invalid JSON, wrong shapes', async () => {
    for (const body of ['<html><body>Error</body></html>', '{"response":', '{"response":{"players":{}}}', 'null', '[]']) {
      const server = Bun.serve({ port: 0, fetch: () => new Response(body, { headers: { 'content-type': 'text/html' } }) });
      const odd = createTestApp({
        config: { STEAM_API_URL: `http://127.0.0.1:${server.port}`, STEAM_WEB_API_KEY: 'x', DATABASE_URL: t.deps.config.DATABASE_URL },
      });
      try {
        const ws = await workspaceWithKey(odd);
        const response = await get('76561198000000999', ws.key, odd);
        expect(response.status).toBe(503);
        expect((await errorOf(response)).code).toBe('upstream_unavailable');
      } finally {
        await odd.close();
        await server.stop(true);
      }
    }
  });
});

describe('GET /v2/profiles without STEAM_WEB_API_KEY', () => {
  test('answers 503 profile_service_unavailable without calling Steam', async () => {
    const keyless = createTestApp({ config: { STEAM_API_URL: fake.url, STEAM_WEB_API_KEY: '', DATABASE_URL: t.deps.config.DATABASE_URL } });
    try {
      const ws = await workspaceWithKey(keyless);
      const before = fake.requests.length;
      const response = await get(PUBLIC_STEAM_ID, ws.key, keyless);
      expect(response.status).toBe(503);
      expect((await errorOf(response)).code).toBe('profile_service_unavailable');
      expect(fake.requests.length).toBe(before);
    } finally {
      await keyless.close();
    }
  });
});
