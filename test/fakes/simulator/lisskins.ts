/**
 * LIS-SKINS in the market simulator, one of docs/design.md §13's six marketplaces (marketplaces.ts):
 *
 *   /lisskins/market_export_json/csgo.json           bare array [{name, price, unlocked_price, count, url}]
 *
 * Money: JSON numbers, two decimals (`12.30`), a pin verbatim; `unlocked_price` null (~25 %), equal
 * to `price` (~50 %) or 1–11 % above it (a pin: equal to it).
 */
import { type BodyWriter, countText, extraMoney, money, nameMember, slugOf, usdText } from './format.ts';
import { type Market, quoteFromCents, SOURCE_SALT } from './market.ts';
import { marketplaceUpstream } from './marketplaces.ts';
import { mix, unit } from './noise.ts';
import type { SimulatorMode, Upstream } from './types.ts';

function lisskinsBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { defaults, marketAsk, marketCount } = market;
  const salt = SOURCE_SALT.lisskins;
  for (const entry of defaults) {
    const quote = marketAsk(entry, 'lisskins', bucket);
    if (!quote) continue;
    const index = rows.count;
    const h = mix(entry.hash, salt, quote.moved);
    const price = usdText(quote);
    let unlocked: string;
    if (quote.pin !== null) unlocked = quote.pin;
    else {
      const r = unit(mix(h, 2));
      unlocked = r < 0.25 ? 'null' : r < 0.75 ? price : quoteFromCents(Math.round((quote.mills / 10) * (1.01 + 0.1 * unit(mix(h, 3))))).text;
    }
    rows.row(
      `{${nameMember('name', entry, index, mode)}"price":${money(price, index, mode)},"unlocked_price":${extraMoney(unlocked, index, mode)},` +
        `"count":${countText(marketCount(entry, 'lisskins', quote), mode)},"url":"https://lis-skins.com/market/csgo/${slugOf(entry)}/"}`,
    );
  }
}

export const LISSKINS: Upstream = marketplaceUpstream({
  source: 'lisskins',
  routes: { '/lisskins/market_export_json/csgo.json': 'lisskins' },
  bodies: { lisskins: { head: () => '[', rows: lisskinsBody, tail: ']' } },
  malformed: { lisskins: '[{"name":"AK-47 | Redline (Field-Tested)","price":12.3' },
  rateLimited: '{"error":"Too Many Requests"}',
});
