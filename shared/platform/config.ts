import { z } from 'zod';
import { SOURCE_DEFAULT_URLS, SOURCE_NAMES, type SourceName } from './source-names.ts';

const booleanString = z.enum(['true', 'false', '1', '0', '']).transform((value) => value === 'true' || value === '1');

const optionalString = z
  .string()
  .optional()
  .transform((value) => (value === '' ? undefined : value));

const withoutTrailingSlash = (url: string): string => url.replace(/\/+$/, '');

/** A comma-separated list: items trimmed, empty ones dropped ('' is no items). */
const commaList = z
  .string()
  .default('')
  .transform((value) =>
    value
      .split(',')
      .map((item) => item.trim())
      .filter((item) => item.length > 0),
  );

type SourceVariables = {
  [Name in SourceName as `SOURCE_${Uppercase<Name>}_URL`]: z.ZodDefault<z.ZodString>;
} & {
  [Name in SourceName as `SOURCE_${Uppercase<Name>}_INTERVAL_SECONDS` | `SOURCE_${Uppercase<Name>}_STALE_SECONDS`]: z.ZodOptional<z.ZodCoercedNumber<unknown>>;
};

/**
 * `SOURCE_<NAME>_URL` (default: the real host), `SOURCE_<NAME>_INTERVAL_SECONDS` and
 * `SOURCE_<NAME>_STALE_SECONDS` (an addition: overrides the stale threshold) for every known source.
 */
function sourceVariables(): SourceVariables {
  const shape: Record<string, z.ZodType> = {};
  for (const name of SOURCE_NAMES) {
    const upper = name.toUpperCase();
    shape[`SOURCE_${upper}_URL`] = z.string().url().default(SOURCE_DEFAULT_URLS[name]);
    shape[`SOURCE_${upper}_INTERVAL_SECONDS`] = z.coerce.number().int().positive().optional();
    shape[`SOURCE_${upper}_STALE_SECONDS`] = z.coerce.number().int().positive().optional();
  }
  return shape as SourceVariables;
}

// docs/design.md §4: one schema over the environment, parsed once; a bad value fails boot naming the variable.
export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  DATABASE_URL: z.string().url().default('postgres://postgres@127.0.0.1:5432/cs2'),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  PUBLIC_BASE_URL: z.string().url().optional(),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  // json: one JSON object per line (production, CI, `npm start --procfile`); pretty: readable lines
  // (pino-pretty), which `npm start` chooses when its output is a terminal.
  LOG_FORMAT: z.enum(['json', 'pretty']).default('json'),
  // Not in docs/design.md §4's list: observability (docs/design.md §12; docs/operations.md "Metrics" and "Queue dashboard").
  // METRICS_TOKEN: when set, GET /metrics (API and worker ports) needs `Authorization: Bearer <it>`;
  // unset, it is open. OPERATOR_TOKEN: the only credential of the queue dashboard (/admin/queues),
  // as Bearer or as the password of HTTP Basic; unset, the dashboard refuses everyone.
  // WORKER_METRICS_PORT: the worker process's metrics port; unset, 9464 + the position of its first
  // pool in POOLS (0 under NODE_ENV=test); 0 picks a free port; a busy port falls back to a free one.
  METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  OPERATOR_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  WORKER_METRICS_PORT: optionalString.pipe(z.coerce.number<string | undefined>().int().min(0).max(65535).optional()),
  // Not in docs/design.md §4's list: the address a worker's metrics server listens on. Loopback by default, so
  // a worker's /metrics is not exposed to the network; an operator opts in (0.0.0.0, or one interface).
  WORKER_METRICS_HOST: z
    .string()
    .regex(/^[0-9a-fA-F:.]{2,45}$|^localhost$/, 'must be an IP address or localhost')
    .default('127.0.0.1'),
  SIGNING_KEY: z.string().min(16, 'must be at least 16 characters').optional(),
  WEBHOOK_SECRET_KEY: optionalString.pipe(
    z
      .string()
      .refine((value) => Buffer.from(value, 'base64').length === 32, 'must be base64 of exactly 32 bytes')
      .optional(),
  ),
  BLOB_DIR: z.string().default('.data/blobs'),
  CHROMIUM_PATH: z.string().default('/usr/bin/chromium'),
  ITEM_FILES_DIR: z.string().default('.data/item-files'),
  SOURCES: commaList
    // Any lower-case name parses; the ingest pool refuses to boot on a source it has no adapter for.
    .pipe(z.array(z.string().regex(/^[a-z][a-z0-9_-]*$/, 'source names are lower-case words'))),
  INGEST_INTERVAL_SECONDS: z.coerce.number().int().positive().optional(),
  // docs/design.md §4 `SOURCE_<NAME>_URL` / `SOURCE_<NAME>_INTERVAL_SECONDS` for every known source (sourceVariables);
  // unset URLs mean the real upstream.
  ...sourceVariables(),
  // docs/design.md §14: the exchange-rate source's host (the ECB's daily reference rates are read from
  // `${FX_URL}/stats/eurofxref/eurofxref-daily.xml`). Always on, not in SOURCES; `npm start` points it
  // at the market simulator (`<simulator>/fx`) when unset.
  FX_URL: z.string().url().default('https://www.ecb.europa.eu'),
  SOURCE_CSFLOAT_API_KEY: optionalString,
  // docs/design.md §13: waxpeer's optional key, sent as its `api` query parameter.
  SOURCE_WAXPEER_KEY: optionalString,
  // docs/design.md §14: skinbaron's (free) key, sent as `apikey` in its request body. Without it skinbaron is
  // not enabled even when SOURCES names it (GET /v2/status says so). A secret: never logged.
  SOURCE_SKINBARON_KEY: optionalString,
  STEAM_WEB_API_KEY: optionalString,
  STEAM_COMMUNITY_URL: z.string().url().default('https://steamcommunity.com'),
  STEAM_API_URL: z.string().url().default('https://api.steampowered.com'),
  // docs/design.md §11: how long a cached Steam profile is served before it is fetched again.
  PROFILE_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(0)
    .max(86_400 * 30)
    .default(600),
  // Not in docs/design.md §4's list: how long an inventory snapshot is served before a request fetches a new
  // one (trade intents always want one at most 10 minutes old), and how many upstream pages (2 000
  // assets each) one fetch may take before it gives up.
  INVENTORY_TTL_SECONDS: z.coerce.number().int().min(0).max(86_400).default(300),
  INVENTORY_MAX_PAGES: z.coerce.number().int().min(1).max(50).default(10),
  // docs/design.md §11: the policy limit on either side's current value of a trade intent, in USD.
  TRADE_MAX_VALUE_USD: z.coerce.number().positive().max(1e9).default(10_000),
  // Not in docs/design.md §4's list: how long an OpenID connect flow (its `state`) may take.
  OPENID_STATE_TTL_SECONDS: z.coerce.number().int().min(30).max(3_600).default(600),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: booleanString.default(false),
  // Not in docs/design.md §4's list: keys WEBHOOK_SECRET_KEY replaced (comma-separated base64, 32 bytes each).
  // They still decrypt stored secrets until `npm run admin -- rewrap-webhook-secrets` has re-encrypted
  // every secret under the current key.
  WEBHOOK_SECRET_KEYS_PREVIOUS: commaList.pipe(
    z.array(z.string().refine((value) => Buffer.from(value, 'base64').length === 32, 'each key must be base64 of exactly 32 bytes')),
  ),
  // Not in docs/design.md §4's list: the delay before each webhook delivery attempt, in ms (docs/design.md §8's schedule:
  // at once, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h); its length is the number of attempts. Tests shorten it.
  WEBHOOK_RETRY_DELAYS_MS: z
    .string()
    .default('0,5000,300000,1800000,7200000,18000000,36000000,36000000')
    .transform((value) => value.split(',').map((delay) => (delay.trim() === '' ? Number.NaN : Number(delay))))
    .pipe(
      z
        .array(
          z
            .number()
            .int('each delay is a whole number of ms')
            .min(0)
            .max(7 * 86_400_000),
        )
        .min(1)
        .max(20),
    ),
  // Not in docs/design.md §4's list: how long one delivery attempt may take (15 s); tests shorten it.
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(15_000),
  // Not in docs/design.md §4's list: trust X-Forwarded-For for the client IP (sign-in limits) only behind a proxy.
  TRUST_PROXY: booleanString.default(false),
  // Not in docs/design.md §4's list: the BullMQ key prefix, so a test run's queues never meet a dev instance's.
  QUEUE_PREFIX: z
    .string()
    .regex(/^[a-z0-9_-]{1,40}$/)
    .default('bull'),
  // Not in docs/design.md §4's list: session lifetime (docs/design.md §5 default 12 h).
  SESSION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .default(12 * 60 * 60),
  // Not in docs/design.md §4's list: audit exports. A worker's lease on a job (renewed every third of it),
  // leases per job before it fails, how long a finished file is kept, and how often the sweeper
  // runs (expired leases, missing BullMQ jobs, files past retention). Tests shorten lease and sweep.
  EXPORT_LEASE_SECONDS: z.coerce.number().int().min(1).max(3_600).default(60),
  EXPORT_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  EXPORT_RETENTION_HOURS: z.coerce
    .number()
    .int()
    .min(1)
    .max(24 * 30)
    .default(24),
  EXPORT_SWEEP_SECONDS: z.coerce.number().int().min(1).max(3_600).default(30),
  // Not in docs/design.md §4's list: renders. Chromium pages per render worker process (its job concurrency),
  // a worker's lease on a render (renewed every third of it), leases per render before it fails,
  // how long one page may take to draw, and how often the sweeper runs. Tests shorten them.
  RENDER_PAGES: z.coerce.number().int().min(1).max(16).default(4),
  RENDER_LEASE_SECONDS: z.coerce.number().int().min(1).max(600).default(60),
  RENDER_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  RENDER_TIMEOUT_MS: z.coerce.number().int().min(500).max(300_000).default(30_000),
  RENDER_SWEEP_SECONDS: z.coerce.number().int().min(1).max(3_600).default(30),
  // docs/design.md §10: how long a viewer session's page URL works (then 410).
  VIEWER_SESSION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .min(1)
    .max(86_400 * 7)
    .default(900),
  // Not in docs/design.md §4's list: the longest an API process serves prices read before the newest ingest
  // run (item prices: until a run is seen, checked at least this often; market summaries and
  // inventory pages: reused this long). 0 = no such caches.
  PRICE_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(2_000),
  // Not in docs/design.md §4's list: the keyless price snapshot is rebuilt at most once per this many seconds
  // (default: the shortest interval of the enabled sources); runs within one interval share a build.
  PRICE_SNAPSHOT_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(3_600).optional(),
  // Issue 13 / docs/design.md §12: retention in days of the time-partitioned tables (shared/retention/,
  // docs/operations.md "Retention"). Expired partitions are dropped by the maintenance pool every hour.
  RETENTION_OBSERVATIONS_DAYS: z.coerce.number().int().min(1).max(3_660).default(7),
  // Events and their prices.updated pages: at least 3 days (retries run ~28 h, a page URL lives 24 h).
  RETENTION_OUTBOX_DAYS: z.coerce.number().int().min(3).max(3_660).default(3),
  RETENTION_INGEST_RUNS_DAYS: z.coerce.number().int().min(1).max(3_660).default(30),
  // The window in which a calculation's constituents are served (GET …/constituents; 410 after).
  RETENTION_INDEX_VECTORS_DAYS: z.coerce.number().int().min(1).max(3_660).default(2),
  // History horizons: how far back each granularity of GET /v2/prices/{id}/history reaches (400 before).
  RETENTION_ROLLUPS_10M_DAYS: z.coerce.number().int().min(1).max(3_660).default(31),
  RETENTION_ROLLUPS_HOURLY_DAYS: z.coerce.number().int().min(1).max(3_660).default(366),
  RETENTION_ROLLUPS_DAILY_DAYS: z.coerce.number().int().min(1).max(36_600).default(3_660),
  // docs/design.md §15: changes kept in the Redis price stream (XADD MAXLEN ~); a resume from before them gets a gap.
  PRICE_STREAM_RETAIN: z.coerce.number().int().min(1_000).max(10_000_000).default(100_000),
  // Bytes queued for all of an API process's price stream clients together; the slowest are cut off past it (issue 29).
  PRICE_STREAM_MAX_BUFFERED_BYTES: z.coerce.number().int().min(1_048_576).max(17_179_869_184).default(67_108_864),
  // docs/design.md §15: how often the maintenance pool re-reads a watched account's inventory, and the one
  // global budget of Steam inventory requests per minute the watch may spend.
  INVENTORY_WATCH_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
  STEAM_INVENTORY_REQUESTS_PER_MINUTE: z.coerce.number().int().min(1).max(100_000).default(20),
  // docs/design.md §17: how often the maintenance pool reads the trade history of an account with an owner
  // token whose workspace subscribes to trade.reversed or item.protection_ended (within the same budget).
  TRADE_HISTORY_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(86_400).default(600),
  // docs/design.md §18: where item images come from. Steam's icon CDN (`<url>/economy/image/<icon_url>`) and
  // the host of @ianlucas/cs2-lib's image paths, models and textures (the library's own default).
  // `npm start` and the tests point both at the local image fake when unset (test/fakes/images/).
  // A trailing slash is dropped, so `<url><path>` never doubles it.
  STEAM_IMAGE_URL: z.string().url().default('https://community.cloudflare.steamstatic.com').transform(withoutTrailingSlash),
  ITEM_ASSETS_URL: z.string().url().default('https://cdn.cstrike.app').transform(withoutTrailingSlash),
  // docs/design.md §18: GET /v2/images/{catalog_id} resizes and serves the image (true) or answers 302 to the
  // upstream url (false). The art is Valve's (docs/decisions.md).
  IMAGE_PROXY: booleanString.default(true),
  // Not in docs/design.md §4's list: the largest upstream image body read (bytes; larger → not stored) and how
  // long one upstream image fetch may take.
  IMAGE_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(1_073_741_824)
    .default(5 * 1_048_576),
  IMAGE_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
  // Not in docs/design.md §4's list: requests per minute per client address on the keyless price endpoints.
  /** docs/design.md §19: the fx source's interval (the ECB publishes once a working day); failures retry sooner (shared/fx/refresh.ts). */
  SOURCE_FX_INTERVAL_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 86_400)
    .default(21_600),
  // docs/design.md §19: skinport's sales history, cached upstream for an hour: read hourly (a local simulator: every 300 s) unless set.
  SOURCE_SKINPORT_SALES_INTERVAL_SECONDS: z.coerce.number().int().min(1).max(86_400).optional(),
  PUBLIC_PRICES_RATE_LIMIT: z.coerce.number().int().positive().default(60),
  /** GET /v2/images requests per minute per client address (docs/design.md §18): a page shows many images at once. */
  IMAGE_RATE_LIMIT: z.coerce.number().int().positive().default(600),
  // Not in docs/design.md §4's list: concurrent GET /v1/prices downloads per client address, per API process.
  PUBLIC_PRICES_MAX_DOWNLOADS_PER_CLIENT: z.coerce.number().int().positive().default(4),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration: ${problems.join('; ')}`);
  }
}

export function parseConfig(env: Record<string, string | undefined>): Config {
  const result = configSchema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`));
  }
  const config = result.data;
  if (config.SIGNING_KEY === undefined) {
    if (config.NODE_ENV === 'production') throw new ConfigError(['SIGNING_KEY: required in production']);
    // Development and tests get a fixed key so cursors survive restarts; production must set its own.
    config.SIGNING_KEY = 'development-signing-key-change-me';
  }
  return config;
}

let cached: Config | undefined;

/** The process configuration, parsed once from process.env. */
export function loadConfig(): Config {
  cached ??= parseConfig(process.env);
  return cached;
}

/** For entry points: the configuration, or a one-line error naming each bad variable and exit 1. */
export function loadConfigOrExit(): Config {
  try {
    return loadConfig();
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`${error.message}\n`);
    process.exit(1);
  }
}
