/**
 * Which local fakes `npm start` runs in place of third parties, and how the service is pointed at
 * them (docs/design.md §4, §9, §11, §13, §14): the market simulator for all ten sources when SOURCES is unset and
 * for the exchange rates when FX_URL is unset (either starts it), the Steam fake for each Steam
 * upstream whose URL is unset, and the image fake for STEAM_IMAGE_URL / ITEM_ASSETS_URL when unset (docs/design.md §18)
 * (a set URL is used as given). Pure, so it is tested without starting
 * anything (test/sources/local-upstreams.test.ts).
 */
import { SOURCE_NAMES } from '../shared/platform/source-names.ts';
import { DEFAULT_STEAM_FAKE_API_KEY } from '../test/fakes/steam/defaults.ts';

/**
 * The key skinbaron is given when it points at the simulator, which accepts any (docs/design.md §14): a real
 * deployment must set its own SOURCE_SKINBARON_KEY, and skinbaron stays disabled without one.
 */
export const SIMULATOR_SKINBARON_KEY = 'local-simulator-key';

export type ProcessEntry = { name: string; command: string };
/** Runs the fakes it is given in one process; `npm start` merges the entries below into one. */
export const FAKES_SCRIPT = 'test/fakes/main.ts';
export type LocalUpstreams = { entries: ProcessEntry[]; env: Record<string, string>; notes: string[] };
type Env = Record<string, string | undefined>;

/** `<NAME>`, when set, pins a fake to a known port; unset (or empty) means a free one. A bad value throws naming it. */
export function configuredPort(env: Env, name: string): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`${name}: must be an integer from 1 to 65535, got ${JSON.stringify(raw)}`);
  return port;
}

/** Checks the port variables at once (before the slow start-up steps), then decides. */
export function localUpstreamsPlan(env: Env): (freePort: () => Promise<number>) => Promise<LocalUpstreams> {
  const simulatorPort = configuredPort(env, 'SIMULATOR_PORT');
  const steamFakePort = configuredPort(env, 'STEAM_FAKE_PORT');
  const imageFakePort = configuredPort(env, 'IMAGE_FAKE_PORT');
  return async (freePort) => {
    const entries: ProcessEntry[] = [];
    const added: Record<string, string> = {};
    const notes: string[] = [];
    if (!env.SOURCES || !env.FX_URL) {
      const at = simulatorPort ?? (await freePort());
      const url = `http://127.0.0.1:${at}`;
      entries.push({ name: 'simulator', command: `bun ${FAKES_SCRIPT} simulator` });
      added.SIMULATOR_PORT = String(at);
      if (!env.SOURCES) {
        // Every source (docs/design.md §9, §13 and §14), each under its own path prefix of the simulator.
        added.SOURCES = SOURCE_NAMES.join(',');
        for (const source of SOURCE_NAMES) added[`SOURCE_${source.toUpperCase()}_URL`] = `${url}/${source}`;
        // Skinbaron runs only with a key; the simulator takes any. A key already set is left alone
        // (it is only ever sent to the simulator here).
        if (!env.SOURCE_SKINBARON_KEY) added.SOURCE_SKINBARON_KEY = SIMULATOR_SKINBARON_KEY;
        notes.push(`no SOURCES set: prices come from the local market simulator at ${url}`);
      }
      // docs/design.md §14: the fx source is always on; offline, its ECB file comes from the simulator too.
      if (!env.FX_URL) {
        added.FX_URL = `${url}/fx`;
        notes.push(`FX_URL not set: exchange rates come from the local market simulator at ${url}/fx`);
      }
    }
    // With the fake serving the Web API, an unset key becomes the fake's, so profiles work offline;
    // a set key is the one the fake accepts.
    const fakeApi = !env.STEAM_API_URL;
    const fakeCommunity = !env.STEAM_COMMUNITY_URL;
    if (fakeApi || fakeCommunity) {
      const at = steamFakePort ?? (await freePort());
      const url = `http://127.0.0.1:${at}`;
      entries.push({ name: 'steam-fake', command: `bun ${FAKES_SCRIPT} steam-fake` });
      added.STEAM_FAKE_PORT = String(at);
      if (fakeApi) {
        added.STEAM_API_URL = url;
        if (env.STEAM_WEB_API_KEY) added.STEAM_FAKE_API_KEY = env.STEAM_WEB_API_KEY;
        else added.STEAM_WEB_API_KEY = DEFAULT_STEAM_FAKE_API_KEY;
      }
      if (fakeCommunity) added.STEAM_COMMUNITY_URL = url;
      const served = [fakeApi ? 'STEAM_API_URL' : null, fakeCommunity ? 'STEAM_COMMUNITY_URL' : null].filter(Boolean).join(' and ');
      notes.push(`${served} not set: Steam comes from the local Steam fake at ${url}`);
    }
    // docs/design.md §18: item images (Steam's icon CDN, cs2-lib's assets) from the image fake for each unset URL.
    const fakeSteamImages = !env.STEAM_IMAGE_URL;
    const fakeItemAssets = !env.ITEM_ASSETS_URL;
    if (fakeSteamImages || fakeItemAssets) {
      const at = imageFakePort ?? (await freePort());
      const url = `http://127.0.0.1:${at}`;
      entries.push({ name: 'image-fake', command: `bun ${FAKES_SCRIPT} image-fake` });
      added.IMAGE_FAKE_PORT = String(at);
      if (fakeSteamImages) added.STEAM_IMAGE_URL = url;
      if (fakeItemAssets) added.ITEM_ASSETS_URL = url;
      const served = [fakeSteamImages ? 'STEAM_IMAGE_URL' : null, fakeItemAssets ? 'ITEM_ASSETS_URL' : null].filter(Boolean).join(' and ');
      notes.push(`${served} not set: item images come from the local image fake at ${url}`);
    }
    return { entries, env: added, notes };
  };
}
