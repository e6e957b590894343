import { versionFromPhaseLabel } from '../catalog/identity.ts';
import { joinUrl } from '../util/url.ts';
import { priceFromJsonNumber } from './money.ts';
import type { FetchContext, SourceAdapter, SourceFetchResult, SourceObservation } from './types.ts';
import { integerOf, isRecord, JsonNumber } from './upstream.ts';
import { bareArray, fetchWholeMarket } from './whole-market.ts';

/**
 * Skinport's public `GET /v1/items?app_id=730&currency=USD` (docs/design.md §9): one request answers the whole
 * market as a bare array of rows, one per (market_hash_name, version). Prices are JSON numbers, read
 * as their source text; rows with `quantity` 0 carry null prices and are simply not priced (not
 * malformed). The real API requires `Accept-Encoding: br` and allows 8 requests per 5 minutes.
 */

/** Without a Retry-After, wait out the whole published window. */
const DEFAULT_RETRY_AFTER_MS = 300_000;

type RowOutcome = SourceObservation | 'unpriced' | 'malformed';

function optionalPrice(value: unknown): string | null | 'malformed' {
  if (value === null || value === undefined) return null;
  if (!(value instanceof JsonNumber)) return 'malformed';
  return priceFromJsonNumber(value.text) ?? 'malformed';
}

export function parseSkinportRow(row: unknown, now: Date): RowOutcome {
  if (!isRecord(row)) return 'malformed';
  const name = row.market_hash_name;
  if (typeof name !== 'string' || name.trim() === '') return 'malformed';
  if (row.version !== null && row.version !== undefined && typeof row.version !== 'string') return 'malformed';
  const version = versionFromPhaseLabel(row.version as string | null | undefined);
  if (version === null) return 'malformed';
  if (row.currency !== undefined && row.currency !== 'USD') return 'malformed';
  const quantity = integerOf(row.quantity);
  if (quantity === null) return 'malformed';
  const price = optionalPrice(row.min_price);
  const median = optionalPrice(row.median_price);
  if (price === 'malformed' || median === 'malformed') return 'malformed';
  if (price === null) return quantity === 0 ? 'unpriced' : 'malformed';
  const updatedAt = integerOf(row.updated_at);
  return {
    market_hash_name: name,
    version,
    price,
    median_price: median,
    bid: null,
    volume_7d: null,
    quantity,
    source_time: updatedAt !== null && updatedAt > 0 ? new Date(updatedAt * 1000) : now,
  };
}

export const skinport: SourceAdapter = {
  name: 'skinport',
  defaultBudget: { requests: 8, windowSeconds: 300 },
  defaultIntervalSeconds: 300,
  needsNames: false,
  listsWholeMarket: false,
  async fetchSnapshot(context: FetchContext): Promise<SourceFetchResult> {
    return fetchWholeMarket(context, {
      source: 'skinport',
      url: joinUrl(context.baseUrl, '/v1/items?app_id=730&currency=USD'),
      headers: { 'accept-encoding': 'br' },
      defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
      rows: bareArray('skinport'),
      parseRow: parseSkinportRow,
    });
  },
};
