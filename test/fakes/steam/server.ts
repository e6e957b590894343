/**
 * The local Steam fake (DESIGN 11, issue 11): one Bun.serve speaking the Web API, the community
 * inventory and the OpenID 2.0 provider in Steam's real formats, from one origin, so tests and
 * `npm start` set STEAM_API_URL = STEAM_COMMUNITY_URL = fake.url. It can fail, throttle and page
 * on demand.
 *
 * API for tests:
 *   startSteamFake({ port?, apiKey? }) → Promise<SteamFake>
 *   fake.url                                 base URL, e.g. http://127.0.0.1:PORT
 *   fake.apiKey                              the Web API key it accepts (STEAM_WEB_API_KEY)
 *   fake.stop()
 *   fake.setProfile(steamId64, summary|null) fields merged over Steam-like defaults; null removes
 *   fake.setInventory(steamId64, InventoryFixture | 'private' | 'not_found')
 *   fake.failNext(kind, { status, retryAfter?, times? })   kind 'profiles' | 'inventory' | 'openid';
 *                                            the next `times` (default 1) requests of that kind fail
 *                                            ('openid': checkid_setup and check_authentication alike);
 *                                            failures queue up in call order
 *   fake.requests                            requests received: { path, query }, oldest first (the last
 *                                            10 000, so a long `npm start` does not grow without bound)
 *   fake.openid.{endpoint, signInAs, positiveAssertion, tamper, rejectAll}   (openid-provider.ts)
 * Fixtures (data.ts): PUBLIC_STEAM_ID, PRIVATE_STEAM_ID, FRIENDS_ONLY_STEAM_ID, EMPTY_STEAM_ID,
 * BIG_STEAM_ID, PARTNER_STEAM_ID, UNKNOWN_STEAM_ID; STEAM_2026_STEAM_ID and STEAM_2026_GERMAN_STEAM_ID
 * (inventories as Steam sends them since 2025: name tags as property 5, charm patterns as property 3
 * and in asset_accessories, a legacy S…A…D… inspect action; the second with German property names);
 * bigInventory(steamId64, assets = 5000); inventoryOf(owner, specs, firstAssetId, { locale? })
 * (items.ts) builds custom inventories.
 */
import type { Server } from 'bun';
import { inventoryPage } from './community-inventory.ts';
import { DEFAULT_STEAM_FAKE_API_KEY } from './defaults.ts';
import { defaultInventories, defaultProfiles, profile, PUBLIC_STEAM_ID } from './data.ts';
import { createOpenIdProvider, type OpenIdHelpers } from './openid-provider.ts';
import type { FailureKind, FailureSpec, FakeState } from './state.ts';
import type { InventoryFixture, PlayerSummary } from './types.ts';
import { getPlayerSummaries } from './web-api.ts';

export type { InventoryFixture, PlayerSummary } from './types.ts';
export {
  bigInventory,
  BIG_STEAM_ID,
  EMPTY_STEAM_ID,
  FRIENDS_ONLY_STEAM_ID,
  PARTNER_STEAM_ID,
  PRIVATE_STEAM_ID,
  PUBLIC_STEAM_ID,
  steam2026InventorySpecs,
  STEAM_2026_GERMAN_STEAM_ID,
  STEAM_2026_STEAM_ID,
  UNKNOWN_STEAM_ID,
} from './data.ts';
export { inventoryOf, INSPECT_LINK, legacyInspectLink, type ItemSpec } from './items.ts';

export { DEFAULT_STEAM_FAKE_API_KEY } from './defaults.ts';

export type SteamFakeOptions = { port?: number; apiKey?: string; hostname?: string };

export type SteamFake = {
  url: string;
  apiKey: string;
  stop(): Promise<void>;
  setProfile(steamId64: string, summary: (Partial<PlayerSummary> & { personaname?: string }) | null): void;
  setInventory(steamId64: string, inventory: InventoryFixture | 'private' | 'not_found'): void;
  failNext(kind: FailureKind, response: FailureSpec): void;
  requests: { path: string; query: Record<string, string> }[];
  openid: OpenIdHelpers;
};

const MAX_LOGGED_REQUESTS = 10_000;
const PRIVATE_FIELDS = ['realname', 'timecreated', 'loccountrycode', 'commentpermission', 'primaryclanid', 'personastateflags'] as const;
const INVENTORY_PATH = /^\/inventory\/(\d{1,20})\/730\/2\/?$/;

export async function startSteamFake(options: SteamFakeOptions = {}): Promise<SteamFake> {
  const state: FakeState = {
    apiKey: options.apiKey ?? DEFAULT_STEAM_FAKE_API_KEY,
    profiles: defaultProfiles(),
    inventories: defaultInventories(new Date()),
    failures: { profiles: [], inventory: [], openid: [] },
    requests: [],
  };
  let baseUrl = '';
  const openid = createOpenIdProvider(state, () => baseUrl, PUBLIC_STEAM_ID);

  const server: Server<undefined> = Bun.serve({
    port: options.port ?? 0,
    hostname: options.hostname ?? '127.0.0.1',
    async fetch(request) {
      const url = new URL(request.url);
      state.requests.push({ path: url.pathname, query: Object.fromEntries(url.searchParams) });
      if (state.requests.length > MAX_LOGGED_REQUESTS) state.requests.shift();
      const path = url.pathname;
      if (request.method === 'GET' && /^\/ISteamUser\/GetPlayerSummaries\/v0*2\/?$/.test(path)) return getPlayerSummaries(state, url);
      const inventory = INVENTORY_PATH.exec(path);
      if (request.method === 'GET' && inventory) return inventoryPage(state, inventory[1]!, url);
      if (path === '/openid/login' && (request.method === 'GET' || request.method === 'POST')) return openid.handle(request, url);
      return new Response('<html><body><h1>Not Found</h1></body></html>', { status: 404, headers: { 'content-type': 'text/html; charset=UTF-8' } });
    },
  });
  baseUrl = `http://${options.hostname ?? '127.0.0.1'}:${server.port}`;

  return {
    url: baseUrl,
    apiKey: state.apiKey,
    async stop() {
      await server.stop(true);
    },
    setProfile(steamId64, summary) {
      if (summary === null) {
        state.profiles.delete(steamId64);
        return;
      }
      const current: Partial<PlayerSummary> = { ...state.profiles.get(steamId64) };
      // Steam shows private data only on public profiles: a profile made non-public loses it.
      if ((summary.communityvisibilitystate ?? current.communityvisibilitystate ?? 3) !== 3) for (const field of PRIVATE_FIELDS) delete current[field];
      state.profiles.set(steamId64, profile(steamId64, { ...current, personaname: current.personaname ?? `fake ${steamId64}`, ...summary, steamid: steamId64 }));
    },
    setInventory(steamId64, inventory) {
      state.inventories.set(steamId64, inventory);
    },
    failNext(kind, response) {
      state.failures[kind].push({ status: response.status, ...(response.retryAfter === undefined ? {} : { retryAfter: response.retryAfter }), remaining: response.times ?? 1 });
    },
    requests: state.requests,
    openid: openid.helpers,
  };
}
