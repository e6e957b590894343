/**
 * Steam in the market simulator: priceoverview, one name per request, and the market search pages
 * (steam-search.ts).
 *
 *   /steam/market/priceoverview/?appid=730&currency=1&market_hash_name=…  {success, lowest_price, volume, median_price}
 *       (any other wallet currency id: the same answer in that currency's money, steam-currencies.ts)
 *   /steam/market/search/render/?appid=730&norender=1&start=…&count=…  {success, start, pagesize, total_count,
 *       results:[{hash_name, sell_listings, sell_price, asset_description:{icon_url, …}, …}]}, by name, count ≤ 100
 *
 * Money: `"$1,234.56"`. Its partial mode breaks every third request since the mode was set; its 429
 * body is `null`.
 */
import { withThousands } from '../../../shared/sources/money.ts';
import { wrongType } from './format.ts';
import { quoteFromCents } from './market.ts';
import { mix, unit } from './noise.ts';
import { otherSteamCurrency, steamInOtherCurrency } from './steam-currencies.ts';
import { createSteamSearch } from './steam-search.ts';
import type { Handler, SimulatorState, Upstream } from './types.ts';

function steamMoney(decimal: string): string {
  const [whole = '0', fraction] = decimal.split('.');
  return `$${withThousands(whole)}${fraction === undefined ? '' : `.${fraction}`}`;
}

function create(state: SimulatorState): Handler {
  const { modes, market } = state;
  const { seed, now, bucketOf, defaults, byName, newItems, ask, generatedQuantity } = market;

  function steam(url: URL): Response | Promise<Response> {
    // docs/design.md §19: another wallet currency answers the USD answer in its money (steam-currencies.ts).
    if (otherSteamCurrency(url)) return steamInOtherCurrency(url, steam, seed, now());
    const json = (text: string, status = 200) => new Response(text, { status, headers: { 'content-type': 'application/json; charset=utf-8' } });
    const name = url.searchParams.get('market_hash_name');
    if (url.searchParams.get('appid') !== '730' || url.searchParams.get('currency') !== '1' || !name) return json('{"success":false}', 400);
    const counter = state.steamPartialCounter;
    state.steamPartialCounter += 1;
    const entry = byName.get(name);
    if (!entry || !newItems.isListed(entry.item, bucketOf(now()))) return json('{"success":false}');
    if (modes.steam === 'wrong_types') {
      const quote = ask(entry, 'steam', bucketOf(now()));
      const money = quote ? steamMoney(quote.text) : '$1.00';
      return json(
        `{"success":true,"lowest_price":${wrongType(JSON.stringify(money), counter)},"volume":12,"median_price":${wrongType(JSON.stringify(money), counter)}}`,
      );
    }
    if (modes.steam === 'partial' && counter % 3 === 1) {
      const kind = Math.floor(counter / 3) % 3;
      if (kind === 0) return json('{"lowest_price":"$2.30","volume":"12"}');
      if (kind === 1) return json('{"success":true,"lowest_price":2.3,"volume":"12","median_price":"$2.40"}');
      return json('{"success":true,"lowest_price":"-$2.30","volume":"12","median_price":"$2.40"}');
    }
    const bucket = bucketOf(now());
    const quote = ask(entry, 'steam', bucket);
    const fixed = entry.fixed;
    const fields: string[] = ['"success":true'];
    if (quote) fields.push(`"lowest_price":${JSON.stringify(steamMoney(quote.text))}`);
    const volume = fixed?.quantity ?? (quote ? Math.max(1, generatedQuantity(entry, 'steam', quote.cents)) : 0);
    if (volume > 0) fields.push(`"volume":${JSON.stringify(withThousands(String(volume)))}`);
    const median = fixed
      ? fixed.median === undefined
        ? quote?.text
        : (fixed.median ?? undefined)
      : quote
        ? quoteFromCents(Math.round(quote.cents * (1.01 + 0.1 * unit(mix(entry.hash, bucket, 5))))).text
        : undefined;
    if (median) fields.push(`"median_price":${JSON.stringify(steamMoney(median))}`);
    return json(`{${fields.join(',')}}`);
  }

  // Steam's search pages (steam-search.ts): priceoverview's ask and volume per item,
  // a new item from its time (the list changes once a bucket at most, and only with new items).
  let searchListed = { bucket: Number.NaN, entries: defaults };
  const searchEntries = () => {
    const bucket = bucketOf(now());
    if (newItems.items.length > 0 && bucket !== searchListed.bucket)
      searchListed = { bucket, entries: defaults.filter((entry) => newItems.isListed(entry.item, bucket)) };
    return searchListed.entries;
  };
  const steamSearch = createSteamSearch(
    searchEntries,
    (entry) => entry.name,
    (entry) => {
      const quote = ask(entry, 'steam', bucketOf(now()));
      return {
        cents: quote?.cents ?? null,
        listings: quote ? (entry.fixed?.quantity ?? Math.max(1, generatedQuantity(entry, 'steam', quote.cents))) : 0,
        hash: entry.hash,
      };
    },
  );

  return (_request, url, _endpoint, path) => (path === '/steam/market/search/render' ? steamSearch(url, modes.steam) : steam(url));
}

export const STEAM: Upstream = {
  source: 'steam',
  routes: { '/steam/market/priceoverview': 'steam', '/steam/market/search/render': 'steam' },
  malformed: { steam: '{"success":tru' },
  rateLimited: 'null',
  create,
};
