import { usdConverter } from '../fx/convert.ts';
import { convertMoneyFields, type FxInfo, withCurrency } from './currency.ts';
import { etagOf, filterPriceListBySource, type PublicPriceList } from './public-document.ts';

/**
 * A keyless list derived from a snapshot's full list (docs/design.md §9 and §14): restricted to one source
 * and/or in another currency. Pure: it runs in the derived-list thread (derived-list-thread.ts,
 * driven by DerivedListPool), never on the API's event loop, where parsing ~20 MB, converting every
 * money field and writing the JSON again held every other request for seconds (issue 29).
 */

/**
 * A conversion as it crosses to the thread: the exact rates as decimal strings (units per 1 EUR, as
 * stored), never a JS number, and the `fx` object the answer carries.
 */
export type DerivedListConversion = { currency: string; fx: FxInfo; rate: string; usdRate: string };

export type DerivedListRequest = { source?: string; conversion?: DerivedListConversion };

/**
 * The derived list's JSON (UTF-8, its own ArrayBuffer so it can be transferred) and its ETag. The
 * document is exactly what the API built on its event loop before: the parsed full list, filtered,
 * converted with shared/fx's converter (exact integer arithmetic, half-even once) and written with JSON.stringify.
 */
export function buildDerivedList(json: Uint8Array, request: DerivedListRequest): { json: Uint8Array; etag: string } {
  let list = JSON.parse(Buffer.from(json.buffer, json.byteOffset, json.byteLength).toString('utf8')) as PublicPriceList;
  if (request.source !== undefined) list = filterPriceListBySource(list, request.source);
  const conversion = request.conversion;
  if (conversion) {
    const { currency, rate, usdRate, fx } = conversion;
    const exact = usdConverter(
      {
        as_of: fx.as_of,
        rates: new Map([
          [currency, rate],
          ['USD', usdRate],
        ]),
        fetched_at: new Date(0),
      },
      currency,
    );
    // Prices repeat (min/median/max and the consensus restate source prices): each distinct amount
    // is converted once. Same converter, same result; only fewer divisions.
    const converted = new Map<string, string>();
    const convert = (usd: string) => {
      let value = converted.get(usd);
      if (value === undefined) converted.set(usd, (value = exact(usd)));
      return value;
    };
    convertMoneyFields(list.items, convert);
    list = withCurrency(list, { currency, fx });
  }
  const bytes = new TextEncoder().encode(JSON.stringify(list));
  return { json: bytes, etag: etagOf(bytes) };
}
