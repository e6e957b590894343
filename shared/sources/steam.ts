import { decimalFromSteamMoney, integerFromSteamCount } from './money.ts';
import { SourceRateLimitedError, type FetchContext, type SourceAdapter, type SourceFetchResult, type SourceObservation } from './types.ts';
import { getJson, isRecord, withPartial } from './upstream.ts';
import { joinUrl } from '../util/url.ts';

/**
 * Steam Community Market `GET /market/priceoverview/?appid=730&currency=1&market_hash_name=…`
 * (DESIGN 9): one request per name, names chosen by the ingest run (`context.names`).
 * `{"success":true,"lowest_price":"$2.30","volume":"1,234","median_price":"$2.40"}`, any field but
 * `success` may be missing; `{"success":false}` (HTTP 2xx) means an unknown name; throttling is a
 * 429 with body `null`, usually without Retry-After. Steam has no phase versions: everything is
 * `default`. A `{"success":false}` under a 5xx is treated as an outage, not as an unknown name,
 * so a failing Steam makes the source stale rather than "fresh with nothing in it".
 */

/** Steam rarely sends Retry-After; its throttling lasts minutes, so back off for five. */
const DEFAULT_RETRY_AFTER_MS = 300_000;

type Outcome = SourceObservation | 'unknown' | 'unpriced' | 'malformed';

function optionalMoney(value: unknown): string | null | 'malformed' {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string') return 'malformed';
  return decimalFromSteamMoney(value) ?? 'malformed';
}

export function parseSteamOverview(name: string, body: unknown, now: Date): Outcome {
  if (!isRecord(body) || typeof body.success !== 'boolean') return 'malformed';
  if (!body.success) return 'unknown';
  const price = optionalMoney(body.lowest_price);
  const median = optionalMoney(body.median_price);
  if (price === 'malformed' || median === 'malformed') return 'malformed';
  let quantity: number | null = null;
  if (body.volume !== undefined && body.volume !== null) {
    if (typeof body.volume !== 'string') return 'malformed';
    quantity = integerFromSteamCount(body.volume);
    if (quantity === null) return 'malformed';
  }
  // No lowest_price: nobody is selling right now (a median alone is not an ask).
  if (price === null) return 'unpriced';
  return { market_hash_name: name, version: 'default', price, median_price: median, bid: null, volume_7d: null, quantity, source_time: now };
}

export const steam: SourceAdapter = {
  name: 'steam',
  defaultBudget: { requests: 20, windowSeconds: 60 },
  defaultIntervalSeconds: 60,
  needsNames: true,
  listsWholeMarket: false,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    const result: SourceFetchResult = { observations: [], skipped: 0, unknown: 0, requests: 0 };
    const unknownNames: string[] = [];
    for (const name of new Set(context.names)) {
      try {
        result.requests += 1;
        const { body } = await getJson({
          source: 'steam',
          context,
          url: joinUrl(context.baseUrl, `/market/priceoverview/?appid=730&currency=1&market_hash_name=${encodeURIComponent(name)}`),
          defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
        });
        const outcome = parseSteamOverview(name, body, context.now());
        if (outcome === 'malformed') result.skipped += 1;
        else if (outcome === 'unknown') {
          result.unknown += 1;
          unknownNames.push(name);
        } else if (outcome !== 'unpriced') result.observations.push(outcome);
      } catch (error) {
        // A request refused by our own budget was never sent.
        if (error instanceof SourceRateLimitedError && error.origin === 'budget') result.requests -= 1;
        throw withPartial(error, result);
      }
    }
    if (result.skipped > 0) context.log.warn({ source: 'steam', skipped: result.skipped }, 'skipped malformed answers');
    if (unknownNames.length > 0) context.log.info({ source: 'steam', unknown: unknownNames.slice(0, 20), count: unknownNames.length }, 'names unknown upstream');
    return result;
  },
};

