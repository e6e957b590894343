/**
 * White.market in the market simulator, one of docs/design.md §13's six marketplaces (marketplaces.ts):
 *
 *   /whitemarket/export/v1/prices/730.json           bare array [{market_hash_name, price, market_product_link, market_product_count}]
 *
 * Money: even rows a string (`"2.30"`), odd rows a JSON number (`2.30`); a pin verbatim.
 */
import { type BodyWriter, countText, money, nameMember, slugOf, usdText } from './format.ts';
import type { Market } from './market.ts';
import { marketplaceUpstream } from './marketplaces.ts';
import type { SimulatorMode, Upstream } from './types.ts';

function whitemarketBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { defaults, marketAsk, marketCount } = market;
  for (const entry of defaults) {
    const quote = marketAsk(entry, 'whitemarket', bucket);
    if (!quote) continue;
    const index = rows.count;
    // Even rows write the price as a string, odd rows as a JSON number.
    const price = index % 2 === 0 ? `"${usdText(quote)}"` : usdText(quote);
    rows.row(
      `{${nameMember('market_hash_name', entry, index, mode)}"price":${money(price, index, mode)},` +
        `"market_product_link":"https://white.market/item/${slugOf(entry)}","market_product_count":${countText(marketCount(entry, 'whitemarket', quote), mode)}}`,
    );
  }
}

export const WHITEMARKET: Upstream = marketplaceUpstream({
  source: 'whitemarket',
  routes: { '/whitemarket/export/v1/prices/730.json': 'whitemarket' },
  bodies: { whitemarket: { head: () => '[', rows: whitemarketBody, tail: ']' } },
  malformed: { whitemarket: '[{"market_hash_name":"AK-47 | Redline (Field-Tested)","price":"1.2' },
  rateLimited: '{"message":"Too Many Requests"}',
});
