import { versionFromPhaseLabel } from '../catalog/identity.ts';
import { joinUrl } from '../util/url.ts';
import { priceFromJsonNumber } from './money.ts';
import { type FetchContext, type SalesObservation, type SalesWindowName, SourceUnavailableError } from './types.ts';
import { getJson, integerOf, isRecord, JsonNumber } from './upstream.ts';

/**
 * Skinport's public sales history, `GET /v1/sales/history?app_id=730&currency=USD` (docs/design.md §19): one
 * request answers every item as a bare array of
 * `{market_hash_name, version, currency, item_page, market_page, last_24_hours, last_7_days,
 * last_30_days, last_90_days}`, each window `{min, max, avg, median, volume}` (JSON numbers; null
 * prices when volume is 0). Upstream caches it for an hour and shares the 8 requests / 5 minutes of
 * skinport's `/v1/items`, so it is read hourly within skinport's request budget
 * (workers/ingest/sales.ts). Each window is read on its own: a window missing or of the wrong shape is
 * skipped and counted, the row's other windows still count; a row without a name is skipped whole.
 */

const WINDOW_FIELDS: readonly [string, SalesWindowName][] = [
  ['last_24_hours', '24h'],
  ['last_7_days', '7d'],
  ['last_30_days', '30d'],
  ['last_90_days', '90d'],
];

/** Without a Retry-After, wait out the whole published window. */
const DEFAULT_RETRY_AFTER_MS = 300_000;

export type SalesFetchResult = { sales: SalesObservation[]; rows: number; skipped: number; requests: number };

function optionalPrice(value: unknown): string | null | 'malformed' {
  if (value === null || value === undefined) return null;
  if (!(value instanceof JsonNumber)) return 'malformed';
  return priceFromJsonNumber(value.text) ?? 'malformed';
}

type WindowOutcome = Omit<SalesObservation, 'market_hash_name' | 'version' | 'window' | 'source_time'> | 'absent' | 'malformed';

function parseWindow(value: unknown): WindowOutcome {
  if (value === undefined || value === null) return 'absent';
  if (!isRecord(value)) return 'malformed';
  const volume = integerOf(value.volume);
  if (volume === null) return 'malformed';
  const prices = [optionalPrice(value.median), optionalPrice(value.avg), optionalPrice(value.min), optionalPrice(value.max)] as const;
  if (prices.includes('malformed')) return 'malformed';
  const [median, mean, min, max] = prices as readonly (string | null)[];
  // Nothing sold: the window is known and empty, whatever prices came with it.
  if (volume === 0) return { median: null, mean: null, min: null, max: null, volume };
  // Sales without a median are not a window we can read.
  if (median === null) return 'malformed';
  return { median: median!, mean: mean ?? null, min: min ?? null, max: max ?? null, volume };
}

/** One row's windows, and how many of its windows (or the row itself) could not be read. */
export function parseSkinportSalesRow(row: unknown, now: Date): { sales: SalesObservation[]; skipped: number } {
  if (!isRecord(row)) return { sales: [], skipped: 1 };
  const name = row.market_hash_name;
  if (typeof name !== 'string' || name.trim() === '') return { sales: [], skipped: 1 };
  if (row.version !== null && row.version !== undefined && typeof row.version !== 'string') return { sales: [], skipped: 1 };
  const version = versionFromPhaseLabel(row.version as string | null | undefined);
  if (version === null) return { sales: [], skipped: 1 };
  if (row.currency !== undefined && row.currency !== 'USD') return { sales: [], skipped: 1 };
  const sales: SalesObservation[] = [];
  let skipped = 0;
  for (const [field, window] of WINDOW_FIELDS) {
    const outcome = parseWindow(row[field]);
    if (outcome === 'absent') continue;
    if (outcome === 'malformed') skipped += 1;
    else sales.push({ market_hash_name: name, version, window, ...outcome, source_time: now });
  }
  return { sales, skipped };
}

/** One read of the sales history. Throws SourceRateLimitedError (429) or SourceUnavailableError like the price adapters. */
export async function fetchSkinportSales(context: Pick<FetchContext, 'baseUrl' | 'log' | 'timeoutMs' | 'acquire' | 'now'>): Promise<SalesFetchResult> {
  const { body } = await getJson({
    source: 'skinport',
    context: { ...context, names: [] },
    url: joinUrl(context.baseUrl, '/v1/sales/history?app_id=730&currency=USD'),
    headers: { 'accept-encoding': 'br' },
    defaultRetryAfterMs: DEFAULT_RETRY_AFTER_MS,
  });
  if (!Array.isArray(body)) throw new SourceUnavailableError('skinport', 'unexpected sales history body: not an array of items');
  const now = context.now();
  const sales: SalesObservation[] = [];
  let skipped = 0;
  for (const row of body) {
    const parsed = parseSkinportSalesRow(row, now);
    skipped += parsed.skipped;
    for (const entry of parsed.sales) sales.push(entry);
  }
  if (skipped > 0) context.log.warn({ source: 'skinport', reader: 'sales', skipped, rows: body.length }, 'skipped malformed sales windows');
  // A body of nothing but unreadable rows is an upstream failure, not a market without sales.
  if (sales.length === 0 && skipped > 0) throw new SourceUnavailableError('skinport', `every sales history row was malformed (${skipped} skipped)`);
  return { sales, rows: body.length, skipped, requests: 1 };
}
