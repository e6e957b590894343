import { describe, expect, test } from 'bun:test';
import { configuredPort, localUpstreamsPlan, SIMULATOR_SKINBARON_KEY } from '../../scripts/local-upstreams.ts';
import { SOURCE_NAMES } from '../../shared/platform/source-names.ts';
import { DEFAULT_STEAM_FAKE_API_KEY } from '../fakes/steam/defaults.ts';

/** What `npm start` runs in place of third parties (issue 10 item 7: SIMULATOR_PORT had no effect). */
const freePorts = () => {
  let next = 40_000;
  return async () => next++;
};

describe('npm start: local fakes for unconfigured upstreams', () => {
  test('SIMULATOR_PORT and STEAM_FAKE_PORT are honoured when set', async () => {
    const plan = await localUpstreamsPlan({ SIMULATOR_PORT: '4123', STEAM_FAKE_PORT: '4124' })(freePorts());
    expect(plan.env.SIMULATOR_PORT).toBe('4123');
    expect(plan.env.SOURCE_SKINPORT_URL).toBe('http://127.0.0.1:4123/skinport');
    expect(plan.env.STEAM_FAKE_PORT).toBe('4124');
    expect(plan.env.STEAM_API_URL).toBe('http://127.0.0.1:4124');
    expect(plan.entries.map((entry) => entry.name)).toEqual(['simulator', 'steam-fake', 'image-fake']);
  });

  test('without SOURCES every source (all ten) is enabled and points at its prefix of the simulator', async () => {
    const plan = await localUpstreamsPlan({ SIMULATOR_PORT: '4123' })(freePorts());
    expect(SOURCE_NAMES.length).toBe(10);
    expect(plan.env.SOURCES!.split(',')).toEqual([...SOURCE_NAMES]);
    for (const source of SOURCE_NAMES) expect(plan.env[`SOURCE_${source.toUpperCase()}_URL`]).toBe(`http://127.0.0.1:4123/${source}`);
    expect(plan.env.SOURCE_CSMARKET_URL).toBe('http://127.0.0.1:4123/csmarket');
    expect(plan.env.SOURCE_WHITEMARKET_URL).toBe('http://127.0.0.1:4123/whitemarket');
    expect(plan.notes[0]).toContain('http://127.0.0.1:4123');
    // Skinbaron runs only with a key (docs/design.md §14): a dummy one, since it points at the simulator.
    expect(plan.env.SOURCE_SKINBARON_URL).toBe('http://127.0.0.1:4123/skinbaron');
    expect(plan.env.SOURCE_SKINBARON_KEY).toBe(SIMULATOR_SKINBARON_KEY);
  });

  test('a dummy skinbaron key only when skinbaron points at the simulator; a set key is kept', async () => {
    const own = await localUpstreamsPlan({ SIMULATOR_PORT: '4123', SOURCE_SKINBARON_KEY: 'my-key' })(freePorts());
    expect(own.env.SOURCE_SKINBARON_KEY).toBeUndefined();
    const configured = await localUpstreamsPlan({ SOURCES: 'skinbaron', FX_URL: 'https://fx.example.test' })(freePorts());
    expect(configured.env.SOURCE_SKINBARON_KEY).toBeUndefined();
    const fxOnly = await localUpstreamsPlan({ SOURCES: 'skinbaron' })(freePorts());
    expect(fxOnly.env.SOURCE_SKINBARON_KEY).toBeUndefined();
  });

  test('unset or empty ports mean free ones', async () => {
    const plan = await localUpstreamsPlan({ SIMULATOR_PORT: '' })(freePorts());
    expect(plan.env.SIMULATOR_PORT).toBe('40000');
    expect(plan.env.STEAM_FAKE_PORT).toBe('40001');
  });

  test('a bad port fails at once, naming the variable', () => {
    for (const value of ['0', '65536', 'abc', '1.5', '-1']) {
      expect(() => localUpstreamsPlan({ SIMULATOR_PORT: value })).toThrow('SIMULATOR_PORT');
      expect(() => localUpstreamsPlan({ IMAGE_FAKE_PORT: value })).toThrow('IMAGE_FAKE_PORT');
      expect(() => localUpstreamsPlan({ STEAM_FAKE_PORT: value })).toThrow('STEAM_FAKE_PORT');
    }
    expect(configuredPort({ X: '8080' }, 'X')).toBe(8080);
  });

  test('configured upstreams are used as given: no simulator with SOURCES and FX_URL, no fake for a set Steam URL', async () => {
    const plan = await localUpstreamsPlan({
      SOURCES: 'skinport',
      FX_URL: 'https://fx.example.test',
      STEAM_API_URL: 'https://api.example.test',
      STEAM_WEB_API_KEY: 'real-key',
    })(freePorts());
    expect(plan.entries.map((entry) => entry.name)).toEqual(['steam-fake', 'image-fake']);
    expect(plan.env.SOURCES).toBeUndefined();
    expect(plan.env.FX_URL).toBeUndefined();
    expect(plan.env.STEAM_API_URL).toBeUndefined();
    expect(plan.env.STEAM_WEB_API_KEY).toBeUndefined();
    expect(plan.env.STEAM_COMMUNITY_URL).toBe('http://127.0.0.1:40000');
    const none = await localUpstreamsPlan({
      SOURCES: 'skinport',
      FX_URL: 'https://fx.example.test',
      STEAM_API_URL: 'https://a.test',
      STEAM_COMMUNITY_URL: 'https://c.test',
      STEAM_IMAGE_URL: 'https://i.test',
      ITEM_ASSETS_URL: 'https://assets.test',
    })(freePorts());
    expect(none).toEqual({ entries: [], env: {}, notes: [] });
  });

  test('an unset FX_URL points the exchange rates at the simulator, which runs for them alone when SOURCES is set', async () => {
    const everything = await localUpstreamsPlan({ SIMULATOR_PORT: '4123' })(freePorts());
    expect(everything.env.FX_URL).toBe('http://127.0.0.1:4123/fx');
    expect(everything.entries.filter((entry) => entry.name === 'simulator')).toHaveLength(1);
    expect(everything.notes.some((note) => note.includes('http://127.0.0.1:4123/fx'))).toBe(true);

    const fxOnly = await localUpstreamsPlan({
      SIMULATOR_PORT: '4123',
      SOURCES: 'skinport',
      SOURCE_SKINPORT_URL: 'https://api.skinport.test',
      STEAM_API_URL: 'https://a.test',
      STEAM_COMMUNITY_URL: 'https://c.test',
      STEAM_IMAGE_URL: 'https://i.test',
      ITEM_ASSETS_URL: 'https://assets.test',
    })(freePorts());
    expect(fxOnly.entries.map((entry) => entry.name)).toEqual(['simulator']);
    expect(fxOnly.env).toEqual({ SIMULATOR_PORT: '4123', FX_URL: 'http://127.0.0.1:4123/fx' });

    const fxSet = await localUpstreamsPlan({ SIMULATOR_PORT: '4123', FX_URL: 'https://fx.example.test' })(freePorts());
    expect(fxSet.env.FX_URL).toBeUndefined();
    expect(fxSet.env.SOURCE_SKINPORT_URL).toBe('http://127.0.0.1:4123/skinport');
  });

  test('with the fake serving the Web API, an unset key becomes the fake’s and a set key is the one the fake accepts', async () => {
    expect((await localUpstreamsPlan({})(freePorts())).env.STEAM_WEB_API_KEY).toBe(DEFAULT_STEAM_FAKE_API_KEY);
    const keyed = await localUpstreamsPlan({ STEAM_WEB_API_KEY: 'mine' })(freePorts());
    expect(keyed.env.STEAM_WEB_API_KEY).toBeUndefined();
    expect(keyed.env.STEAM_FAKE_API_KEY).toBe('mine');
  });

  test('item images come from the image fake for each unset URL; a set one is used as given (docs/design.md §18)', async () => {
    const both = await localUpstreamsPlan({ IMAGE_FAKE_PORT: '4125' })(freePorts());
    expect(both.env.STEAM_IMAGE_URL).toBe('http://127.0.0.1:4125');
    expect(both.env.ITEM_ASSETS_URL).toBe('http://127.0.0.1:4125');
    expect(both.notes.some((note) => note.includes('image fake at http://127.0.0.1:4125'))).toBe(true);
    const steamSet = await localUpstreamsPlan({ STEAM_IMAGE_URL: 'https://icons.example.test' })(freePorts());
    expect(steamSet.env.STEAM_IMAGE_URL).toBeUndefined();
    expect(steamSet.env.ITEM_ASSETS_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const bothSet = await localUpstreamsPlan({ STEAM_IMAGE_URL: 'https://icons.example.test', ITEM_ASSETS_URL: 'https://assets.example.test' })(freePorts());
    expect(bothSet.entries.map((entry) => entry.name)).not.toContain('image-fake');
    expect(bothSet.env.IMAGE_FAKE_PORT).toBeUndefined();
  });
});
