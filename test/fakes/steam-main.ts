/**
 * The Steam fake as a process (`npm run steam-fake`; `npm start` runs it for every Steam URL that is
 * not set): Web API, community inventory and OpenID provider on one origin, STEAM_FAKE_PORT (default
 * 4020). It accepts the Web API key STEAM_FAKE_API_KEY (default: the fake's own key, printed below).
 * Point the service at it with STEAM_API_URL=<url>, STEAM_COMMUNITY_URL=<url>, STEAM_WEB_API_KEY=<key>.
 */
import { createLogger } from '../../shared/logger.ts';
import { BIG_STEAM_ID, EMPTY_STEAM_ID, FRIENDS_ONLY_STEAM_ID, PARTNER_STEAM_ID, PRIVATE_STEAM_ID, PUBLIC_STEAM_ID, startSteamFake } from './steam/server.ts';

const log = createLogger({ level: process.env.LOG_LEVEL || 'info', name: 'steam-fake' });

const rawPort = process.env.STEAM_FAKE_PORT;
const port = rawPort === undefined || rawPort === '' ? 4020 : Number(rawPort);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write('STEAM_FAKE_PORT: must be an integer from 0 to 65535\n');
  process.exit(1);
}

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

let stopping = false;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    void fake.stop().then(() => process.exit(0));
  });
}
