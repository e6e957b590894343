/**
 * CS.DEALS in the market simulator, one of docs/design.md §13's six marketplaces (marketplaces.ts):
 *
 *   /csdeals/API/IPricing/GetLowestPrices/v1?appid=730  {success, response:{items:[{marketname, lowest_price}]}}
 *
 * Money: strings with two decimals (`"2.30"`), a pin verbatim.
 */
import { type BodyWriter, money, nameMember, usdText } from './format.ts';
import type { Market } from './market.ts';
import { json, marketplaceUpstream } from './marketplaces.ts';
import type { SimulatorMode, Upstream } from './types.ts';

function csdealsBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { defaults, marketAsk } = market;
  for (const entry of defaults) {
    const quote = marketAsk(entry, 'csdeals', bucket);
    if (!quote) continue;
    const index = rows.count;
    rows.row(`{${nameMember('marketname', entry, index, mode)}"lowest_price":${money(`"${usdText(quote)}"`, index, mode)}}`);
  }
}

export const CSDEALS: Upstream = marketplaceUpstream({
  source: 'csdeals',
  routes: { '/csdeals/API/IPricing/GetLowestPrices/v1': 'csdeals' },
  bodies: { csdeals: { head: () => '{"success":true,"response":{"items":[', rows: csdealsBody, tail: ']}}' } },
  refuse: (_request, url) => (url.searchParams.get('appid') !== '730' ? json('{"success":false,"error":"appid must be 730 in this simulator"}', 400) : null),
  malformed: { csdeals: '{"success":true,"response":{"items":[{"marketname":"AK-47 | Redline (Field-Tested)","lowest_price":"1.' },
  rateLimited: '{"success":false,"error":"Too many requests"}',
});
