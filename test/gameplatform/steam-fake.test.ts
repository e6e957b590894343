import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { decodeHex, generateHex } from '@csfloat/cs2-inspect-serializer';
import { generateCatalog } from '../../shared/catalog/generate.ts';
import { decodeCertificate } from '../../shared/inspect/certificate.ts';
import {
  BIG_STEAM_ID,
  bigInventory,
  EMPTY_STEAM_ID,
  FRIENDS_ONLY_STEAM_ID,
  HOLDS_2026_STEAM_ID,
  INSPECT_LINK,
  type InventoryFixture,
  PARTNER_STEAM_ID,
  PRIVATE_STEAM_ID,
  PUBLIC_STEAM_ID,
  type SteamFake,
  startSteamFake,
  UNKNOWN_STEAM_ID,
} from '../fakes/steam/server.ts';
import type { SteamAssetProperties, SteamDescription } from '../fakes/steam/types.ts';

let fake: SteamFake;

beforeAll(async () => {
  fake = await startSteamFake();
});
afterAll(async () => {
  await fake.stop();
});

type InventoryPage = InventoryFixture & { total_inventory_count: number; more_items?: number; last_assetid?: string; success: number; rwgrsn: number };

async function page(steamId64: string, query = 'l=english&count=2000'): Promise<{ status: number; body: unknown; headers: Headers }> {
  const res = await fetch(`${fake.url}/inventory/${steamId64}/730/2?${query}`);
  return { status: res.status, body: await res.json(), headers: res.headers };
}

async function summaries(query: string): Promise<Response> {
  return fetch(`${fake.url}/ISteamUser/GetPlayerSummaries/v2/?${query}`);
}

describe('Web API GetPlayerSummaries', () => {
  test('answers known ids in Steam format and leaves unknown ids out', async () => {
    const res = await summaries(`key=${fake.apiKey}&steamids=${PUBLIC_STEAM_ID},${UNKNOWN_STEAM_ID},${PRIVATE_STEAM_ID},${FRIENDS_ONLY_STEAM_ID}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { response: { players: Record<string, unknown>[] } };
    expect(body.response.players.map((p) => p.steamid)).toEqual([PUBLIC_STEAM_ID, PRIVATE_STEAM_ID, FRIENDS_ONLY_STEAM_ID]);
    const [open, closed, friends] = body.response.players;
    expect(open).toMatchObject({
      communityvisibilitystate: 3,
      profilestate: 1,
      personaname: expect.any(String),
      profileurl: expect.any(String),
      avatar: expect.any(String),
      avatarmedium: expect.any(String),
      avatarfull: expect.any(String),
      avatarhash: expect.any(String),
      personastate: 0,
      timecreated: expect.any(Number),
      loccountrycode: 'DE',
    });
    expect(closed).toMatchObject({ communityvisibilitystate: 1 });
    expect(closed).not.toHaveProperty('timecreated');
    expect(friends).toMatchObject({ communityvisibilitystate: 2 });
  });

  test('an unknown id gives an empty players list', async () => {
    const res = await summaries(`key=${fake.apiKey}&steamids=${UNKNOWN_STEAM_ID}`);
    expect(await res.json()).toEqual({ response: { players: [] } });
  });

  test('a wrong or missing key is a 403 HTML page', async () => {
    for (const query of [`key=WRONG&steamids=${PUBLIC_STEAM_ID}`, `steamids=${PUBLIC_STEAM_ID}`]) {
      const res = await summaries(query);
      expect(res.status).toBe(403);
      expect(res.headers.get('content-type')).toContain('text/html');
      expect(await res.text()).toContain('Access is denied');
    }
  });

  test('failNext throttles with Retry-After, then errors, then recovers', async () => {
    fake.failNext('profiles', { status: 429, retryAfter: 7 });
    fake.failNext('profiles', { status: 500, times: 2 });
    const statuses: (number | string | null)[] = [];
    for (let i = 0; i < 4; i += 1) {
      const res = await summaries(`key=${fake.apiKey}&steamids=${PUBLIC_STEAM_ID}`);
      statuses.push(res.status, res.headers.get('retry-after'));
    }
    expect(statuses).toEqual([429, '7', 500, null, 500, null, 200, null]);
  });

  test('setProfile adds, changes and removes a profile', async () => {
    fake.setProfile(UNKNOWN_STEAM_ID, { personaname: 'newcomer', communityvisibilitystate: 3 });
    let body = (await (await summaries(`key=${fake.apiKey}&steamids=${UNKNOWN_STEAM_ID}`)).json()) as { response: { players: Record<string, unknown>[] } };
    expect(body.response.players[0]).toMatchObject({ steamid: UNKNOWN_STEAM_ID, personaname: 'newcomer' });
    fake.setProfile(UNKNOWN_STEAM_ID, { communityvisibilitystate: 1 });
    body = (await (await summaries(`key=${fake.apiKey}&steamids=${UNKNOWN_STEAM_ID}`)).json()) as { response: { players: Record<string, unknown>[] } };
    expect(body.response.players[0]).toMatchObject({ personaname: 'newcomer', communityvisibilitystate: 1 });
    expect(body.response.players[0]).not.toHaveProperty('timecreated');
    fake.setProfile(UNKNOWN_STEAM_ID, null);
    body = (await (await summaries(`key=${fake.apiKey}&steamids=${UNKNOWN_STEAM_ID}`)).json()) as { response: { players: Record<string, unknown>[] } };
    expect(body.response.players).toEqual([]);
  });
});

describe('community inventory', () => {
  test('the rich inventory speaks Steam format with real names and matching certificates', async () => {
    const { status, body } = await page(PUBLIC_STEAM_ID);
    expect(status).toBe(200);
    const inv = body as InventoryPage;
    expect(inv).toMatchObject({ success: 1, rwgrsn: -2, total_inventory_count: inv.assets.length });
    expect(inv.more_items).toBeUndefined();
    const catalog = new Set(generateCatalog().map((item) => item.market_hash_name));
    const descriptions = new Map(inv.descriptions.map((d) => [`${d.classid}_${d.instanceid}`, d]));
    const properties = new Map(inv.asset_properties.map((p) => [p.assetid, p]));
    const names: string[] = [];
    for (const asset of inv.assets) {
      expect(asset).toMatchObject({ appid: 730, contextid: '2', amount: '1' });
      const description = descriptions.get(`${asset.classid}_${asset.instanceid}`)!;
      expect(description).toBeDefined();
      names.push(description.market_hash_name);
      if (description.market_hash_name !== '10 Year Birthday Coin') expect(catalog.has(description.market_hash_name)).toBe(true);
      const props = properties.get(asset.assetid);
      if (description.actions) {
        expect(description.actions[0]).toEqual({ link: INSPECT_LINK, name: 'Inspect in Game...' });
        expect(props).toBeDefined();
        checkCertificate(asset.assetid, description, props!);
      }
    }
    expect(names).toContain('AK-47 | Redline (Field-Tested)');
    expect(names).toContain('★ Karambit | Doppler (Factory New)');
    expect(names).toContain('★ StatTrak™ Karambit | Doppler (Factory New)');
    expect(names).toContain('StatTrak™ M4A1-S | Printstream (Minimal Wear)');
    expect(names).toContain('★ Sport Gloves | Vice (Minimal Wear)');
    expect(names).toContain('Revolution Case');
    const held = inv.descriptions.filter((d) => d.owner_descriptions?.some((o) => o.value.startsWith('Tradable/Marketable After ')));
    expect(held.length).toBe(2);
    for (const d of held) {
      expect(d.tradable).toBe(0);
      // Without preserve_bbcode=1, the year-less form Steam renders since 2026-06-24 (docs/design.md §17).
      expect(d.owner_descriptions!.find((o) => o.value !== ' ')).toEqual({
        type: 'html',
        value: expect.stringMatching(/^Tradable\/Marketable After \d{1,2} [A-Z][a-z]{2} @ 7:00am$/),
      });
    }
    const permanent = inv.descriptions.filter((d) => d.tradable === 0 && !d.owner_descriptions);
    expect(permanent.map((d) => d.market_hash_name).sort()).toEqual(['10 Year Birthday Coin', 'Desert Eagle | Blaze (Factory New)']);
  });

  test('certificates carry stickers, a charm, StatTrak (also 0), a name tag and Doppler phases', async () => {
    const inv = (await page(PUBLIC_STEAM_ID)).body as InventoryPage;
    const decoded = inv.asset_properties.map((p) => decodeHex(p.asset_properties.find((x) => x.propertyid === 6)!.string_value));
    const ak = decoded.find((d) => d.defindex === 7 && d.paintindex === 282 && d.stickers.length > 0)!;
    expect(ak.stickers.map((s) => s.slot)).toEqual([0, 1, 2, 3]);
    expect(ak.stickers[0]!.stickerId).toBe(37);
    expect(ak.stickers[0]!.offsetX).toBeCloseTo(0.1234, 5);
    expect(ak.stickers[1]!.wear).toBeCloseTo(0.25, 5);
    expect(ak.keychains).toHaveLength(1);
    expect(ak.keychains[0]).toMatchObject({ stickerId: 24, pattern: 47123 });
    expect(ak.keychains[0]!.offsetZ).toBeCloseTo(-2.75, 5);
    const printstreams = decoded.filter((d) => d.defindex === 60);
    expect(printstreams.map((d) => d.killeatervalue).sort()).toEqual([0, 1337]);
    expect(printstreams.find((d) => d.killeatervalue === 1337)!.customname).toBe('Printer go brrr');
    expect(
      decoded
        .filter((d) => d.defindex === 507)
        .map((d) => d.paintindex)
        .sort(),
    ).toEqual([415, 417, 419]);
    expect(decoded.find((d) => d.defindex === 1209)!.stickers[0]!.stickerId).toBe(37);
    expect(decoded.find((d) => d.defindex === 1355)!.keychains[0]).toMatchObject({ stickerId: 24, pattern: 1234 });
    expect(decoded.find((d) => d.defindex === 4726)).toBeDefined();
    expect(decoded.find((d) => d.defindex === 5030)!.paintindex).toBe(10048);
  });

  test('pages the big inventory in 3 pages of ≤ 2000 by start_assetid without overlap', async () => {
    const seen = new Set<string>();
    let start: string | undefined;
    let pages = 0;
    for (;;) {
      const { status, body } = await page(BIG_STEAM_ID, `l=english&count=2000${start ? `&start_assetid=${start}` : ''}`);
      expect(status).toBe(200);
      const inv = body as InventoryPage;
      pages += 1;
      expect(inv.total_inventory_count).toBe(5000);
      expect(inv.assets.length).toBeLessThanOrEqual(2000);
      for (const a of inv.assets) {
        expect(seen.has(a.assetid)).toBe(false);
        seen.add(a.assetid);
      }
      const pageIds = new Set(inv.assets.map((a) => a.assetid));
      expect(inv.asset_properties.every((p) => pageIds.has(p.assetid))).toBe(true);
      const keys = new Set(inv.descriptions.map((d) => `${d.classid}_${d.instanceid}`));
      expect(inv.assets.every((a) => keys.has(`${a.classid}_${a.instanceid}`))).toBe(true);
      if (!inv.more_items) {
        expect(inv.last_assetid).toBeUndefined();
        break;
      }
      expect(inv.last_assetid).toBe(inv.assets.at(-1)!.assetid);
      start = inv.last_assetid;
    }
    expect(pages).toBe(3);
    expect(seen.size).toBe(5000);
    const starts = fake.requests.filter((r) => r.path === `/inventory/${BIG_STEAM_ID}/730/2`).map((r) => r.query.start_assetid ?? null);
    expect(starts.slice(-3)).toEqual([null, expect.any(String), expect.any(String)]);
  });

  test('bigInventory builds the requested size with real names in the catalog', () => {
    const inv = bigInventory('76561198000000042', 300);
    expect(inv.assets).toHaveLength(300);
    const catalog = new Set(generateCatalog().map((item) => item.market_hash_name));
    for (const d of inv.descriptions) expect(catalog.has(d.market_hash_name)).toBe(true);
    const props = new Map(inv.asset_properties.map((p) => [p.assetid, p]));
    const descriptions = new Map(inv.descriptions.map((d) => [`${d.classid}_${d.instanceid}`, d]));
    for (const a of inv.assets) {
      const p = props.get(a.assetid);
      if (p) checkCertificate(a.assetid, descriptions.get(`${a.classid}_${a.instanceid}`)!, p);
    }
  });

  test('empty, private, unknown and bad count', async () => {
    expect(await page(EMPTY_STEAM_ID)).toMatchObject({ status: 200, body: { total_inventory_count: 0, success: 1, rwgrsn: -2 } });
    expect((await page(EMPTY_STEAM_ID)).body).not.toHaveProperty('assets');
    expect(await page(PRIVATE_STEAM_ID)).toMatchObject({ status: 403, body: null });
    expect(await page(FRIENDS_ONLY_STEAM_ID)).toMatchObject({ status: 403, body: null });
    expect(await page(UNKNOWN_STEAM_ID)).toMatchObject({ status: 404, body: null });
    expect(await page(PUBLIC_STEAM_ID, 'l=english&count=2001')).toMatchObject({ status: 400, body: null });
  });

  test('setInventory switches an account between fixtures', async () => {
    fake.setInventory(UNKNOWN_STEAM_ID, 'private');
    expect((await page(UNKNOWN_STEAM_ID)).status).toBe(403);
    fake.setInventory(UNKNOWN_STEAM_ID, bigInventory(UNKNOWN_STEAM_ID, 3));
    expect(((await page(UNKNOWN_STEAM_ID)).body as InventoryPage).assets).toHaveLength(3);
    fake.setInventory(UNKNOWN_STEAM_ID, 'not_found');
    expect((await page(UNKNOWN_STEAM_ID)).status).toBe(404);
  });

  test('429 with and without Retry-After and 500, each with body null', async () => {
    fake.failNext('inventory', { status: 429, retryAfter: 30 });
    fake.failNext('inventory', { status: 429 });
    fake.failNext('inventory', { status: 500 });
    const first = await page(PUBLIC_STEAM_ID);
    expect(first).toMatchObject({ status: 429, body: null });
    expect(first.headers.get('retry-after')).toBe('30');
    const second = await page(PUBLIC_STEAM_ID);
    expect(second).toMatchObject({ status: 429, body: null });
    expect(second.headers.get('retry-after')).toBeNull();
    expect(await page(PUBLIC_STEAM_ID)).toMatchObject({ status: 500, body: null });
    expect((await page(PUBLIC_STEAM_ID)).status).toBe(200);
  });
});

describe('hold and protection text (docs/design.md §17)', () => {
  const ownerLines = (d: SteamDescription) => (d.owner_descriptions ?? []).filter((line) => line.value !== ' ');
  const byName = (inv: InventoryPage) => (name: string) => inv.descriptions.filter((d) => d.market_hash_name === name);

  test('with preserve_bbcode=1 the [date] token comes as a bbcode line; without it, rendered year-less; the dated forms, item_expiration and sealed as written', async () => {
    const kept = (await page(HOLDS_2026_STEAM_ID, 'l=english&count=2000&preserve_bbcode=1')).body as InventoryPage;
    const rendered = (await page(HOLDS_2026_STEAM_ID, 'l=english&count=2000')).body as InventoryPage;
    const protectedBbcode = kept.descriptions.find((d) => ownerLines(d).some((line) => line.type === 'bbcode' && line.value.includes('trade-protected')))!;
    expect(protectedBbcode).toMatchObject({ sealed: 1, tradable: 0, marketable: 0 });
    expect(ownerLines(protectedBbcode)).toEqual([
      {
        type: 'bbcode',
        value: expect.stringMatching(/^⇆ This item is trade-protected and cannot be consumed, modified, or transferred until \[date\]\d{10}\[\/date\]$/),
      },
    ]);
    const same = rendered.descriptions.find((d) => d.classid === protectedBbcode.classid && d.instanceid === protectedBbcode.instanceid)!;
    expect(ownerLines(same)).toEqual([
      {
        type: 'html',
        value: expect.stringMatching(/^⇆ This item is trade-protected and cannot be consumed, modified, or transferred until \d{1,2} [A-Z][a-z]{2} @ 7:00am$/),
      },
    ]);
    const values = kept.descriptions.flatMap((d) => ownerLines(d).map((line) => line.value));
    expect(values).toContainEqual(expect.stringMatching(/^Tradable\/Marketable After \[date\]\d{10}\[\/date\]$/));
    expect(values).toContainEqual(expect.stringMatching(/^Tradable\/Marketable After [A-Z][a-z]{2} \d{2}, \d{4} \(7:00:00\) GMT$/));
    expect(values).toContainEqual(expect.stringMatching(/^Tradable\/Marketable After \d{1,2} [A-Z][a-z]{2}, \d{4} \(7:00:00\) GMT$/));
    expect(values).toContainEqual(expect.stringMatching(/^Tradable\/Marketable After [A-Z][a-z]{2} \d{2}, \d{4} \(7:00:00\)$/));
    expect(values).toContainEqual(expect.stringMatching(/^Tradable\/Marketable After \d{1,2} [A-Z][a-z]{2} @ 7:00am$/));
    expect(values).toContainEqual(
      expect.stringMatching(
        /^⇆ This item is trade-protected and cannot be consumed, modified, or transferred until [A-Z][a-z]{2} \d{2}, \d{4} \(7:00:00\) GMT$/,
      ),
    );
    expect(values).toContain('⇆ This item is listed on the Steam Community Market and cannot be consumed or modified.');
    expect(byName(kept)('AWP | Asiimov (Field-Tested)').find((d) => d.sealed_type === 1)).toMatchObject({ sealed: 1, sealed_type: 1, tradable: 0 });
    expect(kept.descriptions.find((d) => d.item_expiration)!.item_expiration).toMatch(/^\d{4}-\d{2}-\d{2}T07:00:00Z$/);
  });

  test('protectItems moves an asset to context 16, sealed until an instant (same asset id, new instance id): gone from the public read, seen with the owner token; endTradeHolds brings it back; the same over POST /_control', async () => {
    const [first, second] = fake.assetIds(PUBLIC_STEAM_ID).slice(-2);
    const until = new Date(Date.UTC(2031, 0, 2, 7, 0, 0));
    fake.protectItems(PUBLIC_STEAM_ID, [first!], until);
    const control = await fetch(`${fake.url}/_control/inventories/${PUBLIC_STEAM_ID}`, {
      method: 'POST',
      body: JSON.stringify({ protect: [second], protect_until: until.toISOString() }),
    });
    expect(control.status).toBe(200);
    const descriptionOf = (inv: InventoryPage, assetId: string) => {
      const asset = inv.assets.find((a) => a.assetid === assetId)!;
      return inv.descriptions.find((d) => d.classid === asset.classid && d.instanceid === asset.instanceid)!;
    };
    let inv = (await page(PUBLIC_STEAM_ID, 'l=english&count=2000&preserve_bbcode=1')).body as InventoryPage;
    expect(inv.assets.map((a) => a.assetid)).not.toContain(first!);
    expect(inv.assets.map((a) => a.assetid)).not.toContain(second!);
    const token = fake.issueAccessToken(PUBLIC_STEAM_ID);
    const econ = (context: string) =>
      fetch(
        `${fake.url}/IEconService/GetInventoryItemsWithDescriptions/v1/?access_token=${token}&steamid=${PUBLIC_STEAM_ID}&appid=730&contextid=${context}&get_descriptions=true&get_asset_properties=true&count=2000`,
      );
    const sixteen = ((await (await econ('16')).json()) as { response: InventoryPage }).response;
    expect(sixteen.assets.map((a) => [a.assetid, a.contextid]).sort()).toEqual(
      [
        [first!, '16'],
        [second!, '16'],
      ].sort(),
    );
    for (const assetId of [first!, second!]) {
      expect(descriptionOf(sixteen, assetId)).toMatchObject({ sealed: 1, tradable: 0, marketable: 0 });
      // No preserve_bbcode on this method: the instant comes rendered in the year-less form.
      expect(ownerLines(descriptionOf(sixteen, assetId)).at(-1)!.value).toBe(
        '⇆ This item is trade-protected and cannot be consumed, modified, or transferred until 2 Jan @ 7:00am',
      );
    }
    const two = ((await (await econ('2')).json()) as { response: InventoryPage }).response;
    expect(two.assets.map((a) => a.assetid)).toEqual(inv.assets.map((a) => a.assetid));
    expect((await fetch(`${fake.url}/_control/inventories/${PUBLIC_STEAM_ID}`, { method: 'POST', body: JSON.stringify({ protect: ['1'] }) })).status).toBe(400);
    fake.endTradeHolds(PUBLIC_STEAM_ID, [first!, second!]);
    inv = (await page(PUBLIC_STEAM_ID, 'l=english&count=2000&preserve_bbcode=1')).body as InventoryPage;
    for (const assetId of [first!, second!]) {
      const free = descriptionOf(inv, assetId);
      expect(free).toMatchObject({ tradable: 1, marketable: 1 });
      expect(free.sealed).toBeUndefined();
    }
    expect(((await (await econ('16')).json()) as { response: Partial<InventoryPage> }).response.assets).toBeUndefined();
  });

  test('the owner read refuses what Steam refuses: no token, a token the fake did not sign, a revoked or expired one (401), another account’s (403)', async () => {
    const econ = (query: string) =>
      fetch(`${fake.url}/IEconService/GetInventoryItemsWithDescriptions/v1/?appid=730&contextid=2&get_descriptions=true&count=100&${query}`);
    expect((await econ(`steamid=${PUBLIC_STEAM_ID}`)).status).toBe(401);
    const forged = [
      'eyJhbGciOiJFZERTQSJ9',
      Buffer.from(JSON.stringify({ sub: PUBLIC_STEAM_ID, exp: 4_000_000_000, jti: 'x' })).toString('base64url'),
      'c2ln',
    ].join('.');
    expect((await econ(`steamid=${PUBLIC_STEAM_ID}&access_token=${forged}`)).status).toBe(401);
    const token = fake.issueAccessToken(PUBLIC_STEAM_ID);
    expect((await econ(`steamid=${PARTNER_STEAM_ID}&access_token=${token}`)).status).toBe(403);
    const good = await econ(`steamid=${PUBLIC_STEAM_ID}&access_token=${token}`);
    expect(good.status).toBe(200);
    expect(((await good.json()) as { response: { total_inventory_count: number } }).response.total_inventory_count).toBeGreaterThan(0);
    fake.revokeAccessToken(token);
    const revoked = await econ(`steamid=${PUBLIC_STEAM_ID}&access_token=${token}`);
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get('content-type')).toContain('text/html');
    const expired = fake.issueAccessToken(PUBLIC_STEAM_ID, new Date(Date.now() - 1000));
    expect((await econ(`steamid=${PUBLIC_STEAM_ID}&access_token=${expired}`)).status).toBe(401);
    const issued = await fetch(`${fake.url}/_control/access-tokens`, { method: 'POST', body: JSON.stringify({ steam_id: PUBLIC_STEAM_ID }) });
    const { token: overHttp } = (await issued.json()) as { token: string };
    expect((await econ(`steamid=${PUBLIC_STEAM_ID}&access_token=${overHttp}`)).status).toBe(200);
  });
});

describe('certificates and the service decoder', () => {
  test("shared/inspect's decoder reads every certificate the fake serves, checksum included", async () => {
    const inv = (await page(PUBLIC_STEAM_ID)).body as InventoryPage;
    const families = inv.asset_properties.map((p) => decodeCertificate(p.asset_properties.find((x) => x.propertyid === 6)!.string_value).item.family);
    expect(new Set(families)).toEqual(new Set(['weapon', 'knife', 'gloves', 'agent', 'sticker', 'charm']));
  });
});

const RETURN_TO = 'http://127.0.0.1:3000/v2/gameplatform/openid/callback?state=abc123';

async function checkAuthentication(params: Record<string, string>): Promise<Response> {
  return fetch(`${fake.url}/openid/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ ...params, 'openid.mode': 'check_authentication' }),
  });
}

function checkidSetup(returnTo = RETURN_TO, realm = 'http://127.0.0.1:3000'): string {
  const query = new URLSearchParams({
    'openid.ns': 'http://specs.openid.net/auth/2.0',
    'openid.mode': 'checkid_setup',
    'openid.return_to': returnTo,
    'openid.realm': realm,
    'openid.identity': 'http://specs.openid.net/auth/2.0/identifier_select',
    'openid.claimed_id': 'http://specs.openid.net/auth/2.0/identifier_select',
  });
  return `${fake.url}/openid/login?${query}`;
}

describe('OpenID 2.0 provider', () => {
  test('checkid_setup redirects the signed-in user to return_to with a signed id_res', async () => {
    const res = await fetch(checkidSetup(), { redirect: 'manual' });
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe('http://127.0.0.1:3000/v2/gameplatform/openid/callback');
    expect(location.searchParams.get('state')).toBe('abc123');
    const params = Object.fromEntries(location.searchParams);
    expect(params).toMatchObject({
      'openid.ns': 'http://specs.openid.net/auth/2.0',
      'openid.mode': 'id_res',
      'openid.op_endpoint': `${fake.url}/openid/login`,
      'openid.claimed_id': `https://steamcommunity.com/openid/id/${PUBLIC_STEAM_ID}`,
      'openid.identity': `https://steamcommunity.com/openid/id/${PUBLIC_STEAM_ID}`,
      'openid.return_to': RETURN_TO,
      'openid.assoc_handle': '1234567890',
      'openid.signed': 'signed,op_endpoint,claimed_id,identity,return_to,response_nonce,assoc_handle',
    });
    expect(params['openid.response_nonce']).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z./);
    expect(Buffer.from(params['openid.sig']!, 'base64')).toHaveLength(20);
    const { state: _state, ...openidOnly } = params;
    const check = await checkAuthentication(openidOnly);
    expect(check.headers.get('content-type')).toContain('text/plain');
    expect(await check.text()).toBe('ns:http://specs.openid.net/auth/2.0\nis_valid:true\n');
  });

  test('an assertion verifies once; the replayed nonce is is_valid:false', async () => {
    const params = fake.openid.positiveAssertion(RETURN_TO, FRIENDS_ONLY_STEAM_ID);
    expect(await (await checkAuthentication(params)).text()).toContain('is_valid:true');
    expect(await (await checkAuthentication(params)).text()).toContain('is_valid:false');
  });

  test('a tampered claimed_id, return_to or signature is is_valid:false', async () => {
    const params = fake.openid.positiveAssertion(RETURN_TO, PUBLIC_STEAM_ID);
    const forged = [
      fake.openid.tamper(params, {
        claimed_id: `https://steamcommunity.com/openid/id/${PRIVATE_STEAM_ID}`,
        identity: `https://steamcommunity.com/openid/id/${PRIVATE_STEAM_ID}`,
      }),
      fake.openid.tamper(params, { return_to: 'http://evil.example/callback' }),
      fake.openid.tamper(params, { sig: Buffer.alloc(20).toString('base64') }),
      fake.openid.tamper(params, { signed: 'op_endpoint,claimed_id' }),
    ];
    for (const f of forged) expect(await (await checkAuthentication(f)).text()).toContain('is_valid:false');
    // None of the forgeries spent the genuine assertion's nonce.
    expect(await (await checkAuthentication(params)).text()).toContain('is_valid:true');
  });

  test('overrides are signed, so only the relying party can refuse them', async () => {
    const params = fake.openid.positiveAssertion(RETURN_TO, PUBLIC_STEAM_ID, { op_endpoint: 'https://elsewhere.example/openid/login' });
    expect(params['openid.op_endpoint']).toBe('https://elsewhere.example/openid/login');
    expect(await (await checkAuthentication(params)).text()).toContain('is_valid:true');
  });

  test('rejectAll makes every check_authentication false; failNext fails the provider', async () => {
    fake.openid.rejectAll(true);
    expect(await (await checkAuthentication(fake.openid.positiveAssertion(RETURN_TO, PUBLIC_STEAM_ID))).text()).toContain('is_valid:false');
    fake.openid.rejectAll(false);
    fake.failNext('openid', { status: 503 });
    expect((await checkAuthentication(fake.openid.positiveAssertion(RETURN_TO, PUBLIC_STEAM_ID))).status).toBe(503);
    expect(await (await checkAuthentication(fake.openid.positiveAssertion(RETURN_TO, PUBLIC_STEAM_ID))).text()).toContain('is_valid:true');
  });

  test('signInAs picks the user; nobody signed in shows the login page; a return_to outside the realm is refused', async () => {
    fake.openid.signInAs(EMPTY_STEAM_ID);
    const res = await fetch(checkidSetup(), { redirect: 'manual' });
    expect(new URL(res.headers.get('location')!).searchParams.get('openid.claimed_id')).toBe(`https://steamcommunity.com/openid/id/${EMPTY_STEAM_ID}`);
    fake.openid.signInAs(null);
    const login = await fetch(checkidSetup(), { redirect: 'manual' });
    expect(login.status).toBe(200);
    fake.openid.signInAs(PUBLIC_STEAM_ID);
    expect((await fetch(checkidSetup(RETURN_TO, 'http://other.example'), { redirect: 'manual' })).status).toBe(400);
  });
});

/** The certificate decodes and agrees with the asset's properties and its market name. */
function checkCertificate(assetId: string, description: SteamDescription, props: SteamAssetProperties): void {
  const hex = props.asset_properties.find((p) => p.propertyid === 6)!.string_value;
  const decoded = decodeHex(hex);
  expect(String(decoded.itemid)).toBe(assetId);
  expect(checksumHolds(hex)).toBe(true);
  const seed = props.asset_properties.find((p) => p.propertyid === 1);
  const wear = props.asset_properties.find((p) => p.propertyid === 2);
  if (seed) expect(decoded.paintseed).toBe(Number(seed.int_value));
  if (wear) {
    expect(decoded.paintwear).toBe(Number(wear.float_value));
    // The payload is the library's own serialisation (its generateHex writes the unmasked key-0 form).
    const reference = Buffer.from(generateHex({ ...decoded, paintwear: decoded.paintwear }), 'hex');
    expect(Buffer.from(unmaskedPayload(hex)).equals(reference.subarray(1, -4))).toBe(true);
  } else {
    expect(decoded.paintwear).toBeUndefined();
  }
  const name = description.market_hash_name;
  expect(decoded.quality).toBe(name.startsWith('★') ? 3 : name.startsWith('StatTrak™') ? 9 : 4);
  expect(decoded.killeatervalue !== undefined).toBe(name.includes('StatTrak™'));
}

function unmaskedPayload(hex: string): Uint8Array {
  const bytes = Buffer.from(hex, 'hex');
  const key = bytes[0]!;
  return Uint8Array.from(bytes.subarray(1, -4), (b) => b ^ key);
}

/** Steam's checksum over the key byte and the unmasked payload (the serializer skips it on masked hex). */
function checksumHolds(hex: string): boolean {
  const bytes = Buffer.from(hex, 'hex');
  const key = bytes[0]!;
  expect(key).not.toBe(0);
  const payload = unmaskedPayload(hex);
  const tail = Buffer.from(bytes.subarray(-4).map((b) => b ^ key));
  const crc = Bun.hash.crc32(Buffer.concat([Uint8Array.from([key]), payload]));
  return tail.readUInt32BE(0) === ((crc & 0xffff) ^ Math.imul(payload.length, crc)) >>> 0;
}
