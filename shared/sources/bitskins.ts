import { versionFromPhaseLabel } from '../catalog/identity.ts';
import { joinUrl } from '../util/url.ts';
import { priceFromThousandthsText } from './money.ts';
import { type FetchContext, type SourceAdapter, type SourceFetchResult, type SourceObservation, SourceUnavailableError } from './types.ts';
import { isRecord, numberText, optionalCountOf } from './upstream.ts';
import { fetchWholeMarket } from './whole-market.ts';

/**
 * BitSkins `GET /market/insell/730` (docs/design.md §13): one keyless request answers the whole market as
 * `{list:[{skin_id, name, price_min, price_max, price_avg, quantity}]}`, prices in integer thousandths
 * of USD, turned into USD with exactly three decimals ("12340" → "12.340", see decimalFromThousandths).
 * - `price` = `price_min` (the lowest ask); `quantity` = `quantity` (listings).
 * - `median_price` is null: `price_avg` is the mean of the asking prices, which one absurdly
 *   overpriced listing drags anywhere; it is neither a median nor a sale price, so it is not read.
 * - `bid` and `volume_7d` are null (no buy orders or sales counts in this export).
 * - Doppler phases live inside the name: `★ Karambit | Doppler Ruby (Factory New)` is the catalog's
 *   `★ Karambit | Doppler (Factory New)` in version `ruby`; `… | Gamma Doppler Phase 3 (…)` is
 *   `… | Gamma Doppler (…)` in `phase-3` (bitskinsName; Doppler finishes always carry an exterior).
 *   Any other name is kept exactly, `default`.
 * Budget: 50 requests per 10 s.
 */

/** Without a Retry-After, wait a few of the 10 s windows out. */
const DEFAULT_RETRY_AFTER_MS = 30_000;

const PHASE_IN_NAME = /^(.+ \| (?:Gamma )?Doppler) (Phase [1-4]|Ruby|Sapphire|Black Pearl|Emerald)( \([^()]+\))$/;

/** A BitSkins name → the catalog's market_hash_name and the price version it names. */
export function bitskinsName(name: string): { marketHashName: string; version: string } {
  const match = PHASE_IN_NAME.exec(name);
  const version = match ? versionFromPhaseLabel(match[2]) : null;
  if (!match || version === null) return { marketHashName: name, version: 'default' };
  return { marketHashName: `${match[1]}${match[3]}`, version };
}

/*
 * Sample raw row (an element of `list`):
 * {"skin_id":1273,"name":"★ Karambit | Doppler Ruby (Factory New)","price_min":3849990,
 *  "price_max":4420000,"price_avg":4013337,"quantity":3}
 */
export function parseBitskinsRow(row: unknown, now: Date): SourceObservation | 'malformed' {
  if (!isRecord(row)) return 'malformed';
  const name = row.name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  const priceText = numberText(row.price_min);
  const price = priceText === null ? null : priceFromThousandthsText(priceText);
  if (price === null) return 'malformed';
  const quantity = optionalCountOf(row.quantity);
  if (quantity === 'malformed') return 'malformed';
  const { marketHashName, version } = bitskinsName(name);
  return { market_hash_name: marketHashName, version, price, median_price: null, bid: null, volume_7d: null, quantity, source_time: now };
}

export const bitskins: SourceAdapter = {
  name: 'bitskins',
  defaultBudget: { requests: 50, windowSeconds: 10 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: true,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    return fetchWholeMarket(context, {
      source: 'bitskins',
      url: joinUrl(context.baseUrl, '/market/insell/730'),
      defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
      rows: (body) => {
        if (!isRecord(body) || !Array.isArray(body.list)) throw new SourceUnavailableError('bitskins', 'unexpected body: no list array');
        return body.list;
      },
      parseRow: parseBitskinsRow,
    });
  },
};
