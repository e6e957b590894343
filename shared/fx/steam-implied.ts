import type { Logger } from '../platform/logger.ts';
import type { WorkerResources } from '../platform/resources.ts';
import { createRequestBudget } from '../sources/budget.ts';
import { ADAPTERS } from '../sources/index.ts';
import { enabledSources, type SourceSettings, sourceSettings } from '../sources/settings.ts';
import { type FetchContext, SourceRateLimitedError, SourceUnavailableError } from '../sources/types.ts';
import { getJson, isRecord } from '../sources/upstream.ts';
import { joinUrl } from '../util/url.ts';
import { hundredthsOf, parseSteamMoney, STEAM_IMPLIED_CURRENCIES, steamWalletCurrency } from './steam-currencies.ts';
import {
  type BasketPair,
  findSteamImpliedStates,
  recordSteamImpliedFailure,
  recordSteamImpliedSuccess,
  saveSteamImpliedRate,
  saveSteamImpliedUnavailable,
} from './steam-implied-repository.ts';

/**
 * Rates implied by Steam's own prices (docs/design.md §19) for the wallet currencies the ECB does not publish:
 * the `fx.steam_implied` job of the ingest pool reads Steam's priceoverview of a fixed basket of
 * liquid items in USD and then in each such currency,
 *
 *   GET ${SOURCE_STEAM_URL}/market/priceoverview/?appid=730&currency=<steam id>&market_hash_name=<name>
 *   → {"success":true,"lowest_price":"1 234,56₸","volume":"1,234","median_price":"1 230,00₸"}
 *
 * and takes rate(X per USD) = the median over the basket of local lowest_price / USD lowest_price,
 * exactly (integer arithmetic on hundredths), rounded once half-even to 8 places. Fewer than
 * MIN_BASKET_PRICES items priced in both → the currency is not offered, with the reason; an answer in
 * an unknown form is counted and that item skipped, never guessed.
 *
 * The reads share the steam source's request budget (Redis, every process) and pace themselves to
 * the part of it the steam ingest run leaves (steamImpliedPaceMs); a 429 blocks that budget for its
 * Retry-After as an ingest run's does, ends the run (the currencies it completed are stored, the
 * others keep their last outcome) and the job retries after it.
 */

/**
 * Cheap, always-listed cases with tens of thousands of sales a day (every name is in the catalog, so
 * the simulator serves them too). Fixed: a rate is comparable from one read to the next.
 */
export const STEAM_IMPLIED_BASKET: readonly string[] = ['Recoil Case', 'Dreams & Nightmares Case', 'Fracture Case', 'Revolution Case', 'Snakebite Case'];
/** docs/design.md §19: a currency with fewer basket prices than this is not offered. */
export const MIN_BASKET_PRICES = 3;
/** As the source adapters' requests (workers/ingest/run.ts). */
const REQUEST_TIMEOUT_MS = 15_000;
/** Steam rarely sends Retry-After; its throttling lasts minutes (as shared/sources/steam.ts). */
const DEFAULT_RETRY_AFTER_MS = 300_000;
/** A run never lasts longer than this (at the real budget a full read takes ~20 minutes). */
export const STEAM_IMPLIED_MAX_RUN_MS = 45 * 60_000;

export const STEAM_DISABLED_REASON = 'the steam source is not enabled (SOURCES does not name it): Steam-implied rates are read through it';

/**
 * The wait between two of these reads: the steam budget's window over the requests of it the steam
 * ingest run leaves (it spends batchSize per interval, at most ~80 % of the budget). At the real
 * budget (20 a minute, 16 for the run) one request every 15 s; against the simulator every 100 ms.
 */
export function steamImpliedPaceMs(settings: Pick<SourceSettings, 'budget' | 'batchSize' | 'intervalSeconds'>): number {
  const { requests, windowSeconds } = settings.budget;
  const ingestPerWindow = settings.batchSize * Math.max(1, windowSeconds / settings.intervalSeconds);
  const spare = Math.max(1, Math.floor(requests - ingestPerWindow));
  return Math.ceil((windowSeconds * 1000) / spare);
}

/** One priceoverview answer's lowest price in `code`, or why there is none. */
export function lowestPriceOf(body: unknown, code: string): { price: string } | 'unknown' | 'unpriced' | 'malformed' {
  if (!isRecord(body) || typeof body.success !== 'boolean') return 'malformed';
  if (!body.success) return 'unknown';
  if (body.lowest_price === undefined || body.lowest_price === null) return 'unpriced';
  if (typeof body.lowest_price !== 'string') return 'malformed';
  const price = parseSteamMoney(body.lowest_price, code);
  // Steam writes cents: a third decimal or anything else unread is an unknown form.
  if (price === null || !/^[0-9]+(\.[0-9]{1,2})?$/.test(price)) return 'malformed';
  return { price };
}

/**
 * The median over `pairs` of local / usd, half-even to 8 places, exactly: each ratio is a fraction of
 * integer hundredths, ordered by cross-multiplication; an even count takes the mean of the middle two,
 * (a/b + c/d) / 2 = (ad + cb) / 2bd; one division with remainder rounds the result.
 */
export function basketMedianRate(pairs: readonly Pick<BasketPair, 'usd' | 'local'>[]): string {
  if (pairs.length === 0) throw new RangeError('an empty basket has no median');
  const fractions = pairs.map((pair) => ({ numerator: hundredthsOf(pair.local), denominator: hundredthsOf(pair.usd) }));
  for (const fraction of fractions) if (fraction.numerator <= 0n || fraction.denominator <= 0n) throw new RangeError('basket prices must be positive');
  fractions.sort((a, b) => {
    const left = a.numerator * b.denominator;
    const right = b.numerator * a.denominator;
    return left < right ? -1 : left > right ? 1 : 0;
  });
  const middle = Math.floor(fractions.length / 2);
  let numerator: bigint;
  let denominator: bigint;
  if (fractions.length % 2 === 1) {
    ({ numerator, denominator } = fractions[middle]!);
  } else {
    const low = fractions[middle - 1]!;
    const high = fractions[middle]!;
    numerator = low.numerator * high.denominator + high.numerator * low.denominator;
    denominator = 2n * low.denominator * high.denominator;
  }
  const scaled = numerator * 10n ** 8n;
  let quotient = scaled / denominator;
  const twice = (scaled - quotient * denominator) * 2n;
  if (twice > denominator || (twice === denominator && (quotient & 1n) === 1n)) quotient += 1n;
  const digits = quotient.toString().padStart(9, '0');
  return `${digits.slice(0, -8)}.${digits.slice(-8)}`;
}

export type SteamImpliedOutcome =
  | { status: 'succeeded'; rated: string[]; unavailable: { currency: string; reason: string }[]; requests: number; skipped: number }
  | { status: 'disabled' }
  | { status: 'busy' }
  | {
      status: 'failed';
      error: string;
      /** Set after a 429 (or a budget blocked by one): the wait before a retry can be admitted. */
      retryAfterMs: number | null;
      consecutiveFailures: number;
      rated: string[];
      unavailable: { currency: string; reason: string }[];
      requests: number;
    };

export type SteamImpliedOptions = {
  /** Wait between two requests (default steamImpliedPaceMs of the steam settings; tests use 0). */
  paceMs?: number;
  maxRunMs?: number;
  /** Sleep (tests may replace it); default Bun.sleep. */
  sleep?: (ms: number) => Promise<void>;
};

class RunOutOfTime extends Error {}

/** `${QUEUE_PREFIX}:fx-steam-implied:lock`: one run at a time per deployment (schedule, start-up and retry may overlap). */
function lockKey(queuePrefix: string): string {
  return `${queuePrefix}:fx-steam-implied:lock`;
}

function describeMissing(count: number, code: string): string {
  return `only ${count} of ${STEAM_IMPLIED_BASKET.length} basket items have a lowest price on Steam in both USD and ${code} (${MIN_BASKET_PRICES} needed): not offered rather than guessed`;
}

/**
 * One run of the `fx.steam_implied` job: every Steam-implied currency read once (oldest outcome first),
 * each stored as soon as its basket is read. With the steam source disabled every such currency is
 * stored as not offered, with that reason, and nothing is read.
 */
export async function refreshSteamImpliedRates(deps: WorkerResources, options: SteamImpliedOptions = {}): Promise<SteamImpliedOutcome> {
  const { sql, redis, config, now } = deps;
  const log: Logger = deps.log.child({ source: 'fx', upstream: 'steam-implied' });
  if (!enabledSources(config).includes('steam')) {
    await saveSteamImpliedUnavailable(sql, STEAM_IMPLIED_CURRENCIES, STEAM_DISABLED_REASON, [], now());
    return { status: 'disabled' };
  }
  const maxRunMs = options.maxRunMs ?? STEAM_IMPLIED_MAX_RUN_MS;
  const token = crypto.randomUUID();
  const key = lockKey(config.QUEUE_PREFIX);
  if ((await redis.set(key, token, 'PX', maxRunMs + 60_000, 'NX')) !== 'OK') {
    log.info('a Steam-implied rate read is already running; skipping');
    return { status: 'busy' };
  }
  const settings = sourceSettings(config, ADAPTERS.steam);
  const budget = createRequestBudget(redis, 'steam', settings.budget, { now });
  const paceMs = options.paceMs ?? steamImpliedPaceMs(settings);
  const sleep = options.sleep ?? ((ms: number) => Bun.sleep(ms));
  const windowMs = settings.budget.windowSeconds * 1000;
  const started = performance.now();
  let lastRequestAt = -Infinity;
  // Paced, and patient with the shared budget: a full window is waited out (the ingest run's turn);
  // a longer wait is a Retry-After block, which ends the run.
  const acquire = async () => {
    const wait = lastRequestAt + paceMs - performance.now();
    if (wait > 0) await sleep(wait);
    for (;;) {
      if (performance.now() - started > maxRunMs) throw new RunOutOfTime(`the read took longer than ${Math.round(maxRunMs / 60_000)} min`);
      try {
        await budget.acquire();
        lastRequestAt = performance.now();
        return;
      } catch (error) {
        if (!(error instanceof SourceRateLimitedError) || error.retryAfterMs > windowMs) throw error;
        await sleep(error.retryAfterMs);
      }
    }
  };
  const context: FetchContext = { baseUrl: settings.baseUrl, log, timeoutMs: REQUEST_TIMEOUT_MS, acquire, names: [], now };
  let requests = 0;
  let skipped = 0;
  const rated: string[] = [];
  const unavailable: { currency: string; reason: string }[] = [];
  const read = async (name: string, code: string): Promise<string | null> => {
    const steamId = steamWalletCurrency(code)!.steamId;
    requests += 1;
    let body: unknown;
    try {
      ({ body } = await getJson({
        source: 'steam',
        context,
        url: joinUrl(settings.baseUrl, `/market/priceoverview/?appid=730&currency=${steamId}&market_hash_name=${encodeURIComponent(name)}`),
        defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
      }));
    } catch (error) {
      // A request refused by the budget (or out of time) was never sent.
      if ((error instanceof SourceRateLimitedError && error.origin === 'budget') || error instanceof RunOutOfTime) requests -= 1;
      throw error;
    }
    const outcome = lowestPriceOf(body, code);
    if (outcome === 'malformed') {
      skipped += 1;
      log.warn(
        { currency: code, market_hash_name: name, lowest_price: isRecord(body) ? String(body.lowest_price).slice(0, 40) : null },
        'priceoverview answer in an unknown form; skipped',
      );
    }
    return typeof outcome === 'object' ? outcome.price : null;
  };
  try {
    const usd: { name: string; price: string }[] = [];
    for (const name of STEAM_IMPLIED_BASKET) {
      const price = await read(name, 'USD');
      if (price !== null) usd.push({ name, price });
    }
    if (usd.length < MIN_BASKET_PRICES) {
      const reason = `only ${usd.length} of ${STEAM_IMPLIED_BASKET.length} basket items have a lowest price on Steam in USD (${MIN_BASKET_PRICES} needed): not offered rather than guessed`;
      await saveSteamImpliedUnavailable(sql, STEAM_IMPLIED_CURRENCIES, reason, [], now());
      for (const currency of STEAM_IMPLIED_CURRENCIES) unavailable.push({ currency, reason });
    } else {
      // Oldest outcome first: a run cut short by a 429 leaves the same currencies behind only once.
      const states = await findSteamImpliedStates(sql);
      const order = [...STEAM_IMPLIED_CURRENCIES].sort((a, b) => (states.get(a)?.read_at.getTime() ?? 0) - (states.get(b)?.read_at.getTime() ?? 0));
      for (const currency of order) {
        const basket: BasketPair[] = [];
        for (const { name, price } of usd) {
          const local = await read(name, currency);
          if (local !== null) basket.push({ market_hash_name: name, usd: price, local });
        }
        if (basket.length >= MIN_BASKET_PRICES) {
          await saveSteamImpliedRate(sql, currency, basketMedianRate(basket), basket, now());
          rated.push(currency);
        } else {
          const reason = describeMissing(basket.length, currency);
          await saveSteamImpliedUnavailable(sql, [currency], reason, basket, now());
          unavailable.push({ currency, reason });
        }
      }
    }
    await recordSteamImpliedSuccess(sql, now(), skipped);
    log.info(
      { rated: rated.length, unavailable: unavailable.map((entry) => entry.currency), requests, skipped, ms: Math.round(performance.now() - started) },
      'Steam-implied rates stored',
    );
    return { status: 'succeeded', rated, unavailable, requests, skipped };
  } catch (error) {
    let retryAfterMs: number | null = null;
    if (error instanceof SourceRateLimitedError) {
      retryAfterMs = error.retryAfterMs;
      // As an ingest run does (workers/ingest/run.ts): every user of the steam budget waits it out.
      if (error.origin === 'upstream') await budget.blockUntil(new Date(now().getTime() + error.retryAfterMs));
    } else if (!(error instanceof SourceUnavailableError) && !(error instanceof RunOutOfTime)) {
      throw error;
    }
    const message = error.message;
    const consecutiveFailures = await recordSteamImpliedFailure(sql, now(), message);
    log.warn(
      { err: message, retry_after_ms: retryAfterMs, rated: rated.length, requests, consecutive_failures: consecutiveFailures },
      'Steam-implied rate read cut short; the other currencies keep their last outcome',
    );
    return { status: 'failed', error: message, retryAfterMs, consecutiveFailures, rated, unavailable, requests };
  } finally {
    // Only our own lock (a run past its expiry must not free the next run's).
    await redis
      .eval("if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0", 1, key, token)
      // Left to expire (at most maxRunMs + 1 min): the next run waits that long at worst.
      .catch((error: Error) => log.warn({ err: error.message }, 'could not release the Steam-implied read lock'));
  }
}
