/**
 * The local fakes as long-running services, configured from the environment: the market simulator
 * (`npm run simulator`), the Steam fake (`npm run steam-fake`) and the image fake. `npm start` runs the ones it needs
 * in one process (test/fakes/main.ts): each Bun process costs ~60 MB of RSS before it does anything.
 */
import { createLogger } from '../../shared/platform/logger.ts';
import { MemoryReleaser } from '../../shared/platform/memory.ts';
import { IMAGE_FAULT_KINDS, startImageFake } from './images/server.ts';
import { DEFAULT_NEW_ITEMS } from './simulator/new-items.ts';
import { SIMULATED_SOURCES, SIMULATOR_MODES, type SimulatorItem, startMarketSimulator } from './simulator/server.ts';
import { BIG_STEAM_ID, EMPTY_STEAM_ID, FRIENDS_ONLY_STEAM_ID, PARTNER_STEAM_ID, PRIVATE_STEAM_ID, PUBLIC_STEAM_ID, startSteamFake } from './steam/server.ts';

export type RunningFake = { stop: () => Promise<void> };

function integerEnv(name: string, fallback: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < 0 || value > max) {
    process.stderr.write(`${name}: must be an integer from 0 to ${max}\n`);
    process.exit(1);
  }
  return value;
}

/**
 * The market simulator over the real catalog, on SIMULATOR_PORT (default 4010), SIMULATOR_SEED
 * (default 1). Point each source at it with SOURCE_<NAME>_URL=<url>/<name> (skinport, steam, …) and
 * the exchange rates with FX_URL=<url>/fx; switch modes with POST <url>/_control/<source|fx|all>/<mode>.
 */
export async function runSimulatorFromEnv(): Promise<RunningFake> {
  const log = createLogger({ level: process.env.LOG_LEVEL || 'info', name: 'simulator' });
  const port = integerEnv('SIMULATOR_PORT', 4010, 65535);
  const seed = integerEnv('SIMULATOR_SEED', 1, 0xffffffff);
  const started = performance.now();
  // The real catalog, generated in a worker thread so its libraries do not stay in this process.
  const catalog = await new Promise<SimulatorItem[]>((resolve, reject) => {
    const worker = new Worker(new URL('./simulator-catalog-worker.ts', import.meta.url));
    worker.onmessage = (event: MessageEvent<SimulatorItem[]>) => {
      resolve(event.data);
      worker.terminate();
    };
    // The thread's heap is released once it has closed; collect now rather than at the next natural GC.
    worker.addEventListener('close', () => Bun.gc(true));
    worker.onerror = (event) => reject(new Error(`catalog worker failed: ${event.message}`));
  });
  // docs/design.md §19: a few real items the catalog lacks come on the market minutes after start (new-items.ts).
  const simulator = startMarketSimulator({ port, seed, items: catalog, newItems: DEFAULT_NEW_ITEMS });
  log.info(
    {
      url: simulator.url,
      items: catalog.length,
      new_items: DEFAULT_NEW_ITEMS.map((item) => `${item.market_hash_name} after ${item.afterBuckets} buckets`),
      ms: Math.round(performance.now() - started),
      sources: `${simulator.url}/<${SIMULATED_SOURCES.join('|')}>`,
      fx: `${simulator.url}/fx`,
      control: `POST ${simulator.url}/_control/<source|fx|all>/<${SIMULATOR_MODES.join('|')}>`,
    },
    `market simulator listening on ${simulator.url}`,
  );
  // It runs beside `npm start`: return the garbage of the large bodies it renders (one per source and bucket).
  const memory = new MemoryReleaser();
  const timer = setInterval(() => memory.afterWork(), 5_000);
  timer.unref();
  return {
    stop: async () => {
      clearInterval(timer);
      await simulator.stop();
    },
  };
}

/**
 * The Steam fake: Web API, community inventory and OpenID provider on one origin, STEAM_FAKE_PORT
 * (default 4020). It accepts the Web API key STEAM_FAKE_API_KEY (default: the fake's own key, logged).
 * Point the service at it with STEAM_API_URL=<url>, STEAM_COMMUNITY_URL=<url>, STEAM_WEB_API_KEY=<key>.
 */
export async function runSteamFakeFromEnv(): Promise<RunningFake> {
  const log = createLogger({ level: process.env.LOG_LEVEL || 'info', name: 'steam-fake' });
  const port = integerEnv('STEAM_FAKE_PORT', 4020, 65535);
  const fake = await startSteamFake({ port, ...(process.env.STEAM_FAKE_API_KEY ? { apiKey: process.env.STEAM_FAKE_API_KEY } : {}) });
  log.info(
    {
      url: fake.url,
      web_api_key: fake.apiKey,
      openid: fake.openid.endpoint,
      signed_in: PUBLIC_STEAM_ID,
      steam_ids: {
        public_rich_inventory: PUBLIC_STEAM_ID,
        private_profile_and_inventory: PRIVATE_STEAM_ID,
        friends_only_private_inventory: FRIENDS_ONLY_STEAM_ID,
        empty_inventory: EMPTY_STEAM_ID,
        inventory_of_5000: BIG_STEAM_ID,
        trade_partner: PARTNER_STEAM_ID,
      },
    },
    `Steam fake listening on ${fake.url}`,
  );
  return { stop: () => fake.stop() };
}

/**
 * The image fake (docs/design.md §18): Steam's icon CDN and cs2-lib's asset host on one origin, IMAGE_FAKE_PORT
 * (default 4030). Point the service at it with STEAM_IMAGE_URL=<url> and ITEM_ASSETS_URL=<url>.
 */
export async function runImageFakeFromEnv(): Promise<RunningFake> {
  const log = createLogger({ level: process.env.LOG_LEVEL || 'info', name: 'image-fake' });
  const port = integerEnv('IMAGE_FAKE_PORT', 4030, 65535);
  const fake = startImageFake({ port });
  log.info(
    {
      url: fake.url,
      steam_icons: `${fake.url}/economy/image/<icon_url>[/<n>fx<n>f]`,
      cs2_lib: `${fake.url}/images/<name>.webp, /models/<hash>.glb, /textures/<hash>.webp`,
      faults: `POST ${fake.url}/_control/faults {path, kind: ${IMAGE_FAULT_KINDS.join('|')}|null}`,
    },
    `image fake listening on ${fake.url}`,
  );
  return { stop: () => fake.stop() };
}

export const FAKES = { simulator: runSimulatorFromEnv, 'steam-fake': runSteamFakeFromEnv, 'image-fake': runImageFakeFromEnv } as const;
export type FakeName = keyof typeof FAKES;

/** Stops every fake on SIGINT/SIGTERM, then exits. */
export function stopOnSignals(running: RunningFake[]): void {
  let stopping = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopping) return;
      stopping = true;
      void Promise.allSettled(running.map((fake) => fake.stop())).then(() => process.exit(0));
    });
  }
}
