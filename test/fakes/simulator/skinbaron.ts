/**
 * Skinbaron in the market simulator (docs/design.md §14): its one price list, a POST, from the shared
 * marketplace model (marketplaces.ts) in EUR.
 *
 *   POST /skinbaron/GetExtendedPriceList            bare array [{marketHashName, lowestPrice, minWear, maxWear, imageUrl, dopplerClassName}], EUR
 *
 * Money: JSON numbers with two decimals (`27.95`), the USD ask divided by the USD rate of the ECB
 * file this simulator serves for that day (fx.ts; so converted back it roughly agrees with the
 * others), rounded to the euro cent; a `price` pin is converted the same way, a `sources.skinbaron`
 * pin is EUR already and written verbatim. A Doppler name has its plain row (`dopplerClassName` null,
 * its lowest phase) and one row per listed phase with an undocumented `dopplerClassName` (`"phase2"`,
 * `"ruby"`, …). The request must be a POST with `x-requested-with: XMLHttpRequest` and a JSON body
 * `{apikey, appId: 730}`; any non-empty key is accepted (401 without one, 400 otherwise).
 */
import { type BodyWriter, money, nameMember, slugOf } from './format.ts';
import { ecbUsdRate } from './fx.ts';
import { type Entry, EXTERIORS, exteriorOf, type Market, type MarketQuote, quoteFromCents } from './market.ts';
import { marketplaceUpstream } from './marketplaces.ts';
import type { SimulatorMode, Upstream } from './types.ts';

/** Skinbaron's undocumented `dopplerClassName` for a phase version: `phase-2` → "phase2", `black-pearl` → "blackpearl". */
const dopplerClassName = (version: string) => version.replaceAll('-', '');

/**
 * Skinbaron (docs/design.md §14): the shared market's USD ask in EUR at the day's USD rate, to the euro cent
 * (EUR cents = USD mills × 10^d / (10 × rate units), integer arithmetic then one rounding); a
 * `sources.skinbaron` pin is EUR already. Doppler names: the plain row, then a row per listed phase.
 */
function skinbaronBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { seed, bucketMs, defaults, marketAsk } = market;
  const usd = ecbUsdRate(seed, new Date(bucket * bucketMs));
  const eurText = (entry: Entry, quote: MarketQuote) => {
    if (quote.pin !== null && entry.fixed?.sources.skinbaron) return quote.pin;
    const cents = Math.max(1, Math.round((quote.mills * 10 ** usd.decimals) / (10 * usd.units)));
    return quoteFromCents(cents).text;
  };
  const row = (entry: Entry, quote: MarketQuote, doppler: string | null) => {
    const index = rows.count;
    const [minWear, maxWear] = EXTERIORS[exteriorOf(entry.name) ?? '']?.wear ?? [null, null];
    rows.row(
      `{${nameMember('marketHashName', entry, index, mode)}"lowestPrice":${money(eurText(entry, quote), index, mode)},` +
        `"minWear":${minWear ?? 'null'},"maxWear":${maxWear ?? 'null'},` +
        `"imageUrl":"https://steamcommunity-a.akamaihd.net/economy/image/${slugOf(entry)}/","dopplerClassName":${doppler === null ? 'null' : JSON.stringify(doppler)}}`,
    );
  };
  for (const entry of defaults) {
    const quote = marketAsk(entry, 'skinbaron', bucket);
    if (!quote) continue;
    row(entry, quote, null);
    for (const phase of entry.phaseEntries) {
      const phaseQuote = marketAsk(phase, 'skinbaron', bucket);
      if (phaseQuote) row(phase, phaseQuote, dopplerClassName(phase.version));
    }
  }
}

/** Skinbaron's request checks (docs/design.md §14): the header, then the JSON body `{apikey, appId: 730}`; any non-empty key passes. */
async function skinbaronRefusal(request: Request): Promise<Response | null> {
  const refuse = (status: number, message: string) => Response.json({ message }, { status });
  if (request.headers.get('x-requested-with') !== 'XMLHttpRequest') return refuse(400, 'x-requested-with: XMLHttpRequest is required');
  let body: unknown;
  try {
    body = await request.json();
  } catch {
    return refuse(400, 'the body must be JSON');
  }
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (typeof fields.apikey !== 'string' || fields.apikey === '') return refuse(401, 'wrong or missing apikey');
  if (fields.appId !== 730) return refuse(400, 'appId must be 730 in this simulator');
  return null;
}

export const SKINBARON: Upstream = marketplaceUpstream({
  source: 'skinbaron',
  method: 'POST',
  routes: { '/skinbaron/GetExtendedPriceList': 'skinbaron' },
  bodies: { skinbaron: { head: () => '[', rows: skinbaronBody, tail: ']' } },
  refuse: skinbaronRefusal,
  malformed: { skinbaron: '[{"marketHashName":"AK-47 | Redline (Field-Tested)","lowestPrice":27.9' },
  rateLimited: '{"message":"Too many requests"}',
});
