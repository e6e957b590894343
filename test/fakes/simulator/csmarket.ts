/**
 * csmarket (market.csgo.com) in the market simulator, one of docs/design.md §13's six marketplaces (marketplaces.ts):
 *
 *   /csmarket/api/v2/prices/class_instance/USD.json  {success, time, currency, items:{"<classid>_<instanceid>":…}}
 *
 * Money: `price` a string with exactly three decimals (`"2.300"`, `"32.393"`); `buy_order` and
 * `avg_price` strings with trailing zeros trimmed (`"30.1"`), a pinned bid verbatim; `popularity_7d`
 * an integer string. One name under 1 key (~80 %), 2 (~15 %) or 3 (~5 %), its ask (lowest `price`)
 * on one of them in any position, the others dearer by 1–16 %. Only csmarket has buy orders: ~30 %
 * of names have none (every key null); otherwise the highest, 82–97 % of the ask, sits on one key and
 * the others are lower or null. `popularity_7d` is null on ~25 % of keys; `avg_price` null on ~20 %.
 * A row of the partial mode is one key of `items`; in wrong_types `popularity_7d` is an object.
 */
import { type BodyWriter, extraMoney, millsText, money, nameMember, trimmedText } from './format.ts';
import { type Entry, type Market, SOURCE_SALT } from './market.ts';
import { marketplaceUpstream } from './marketplaces.ts';
import { mix, unit } from './noise.ts';
import type { SimulatorMode, Upstream } from './types.ts';

// csmarket: one object member per (classid, instanceid); a name under 1–3 keys.
const RU_EXTERIORS: Record<string, string> = {
  'Factory New': 'Прямо с завода',
  'Minimal Wear': 'Немного поношенное',
  'Field-Tested': 'После полевых испытаний',
  'Well-Worn': 'Поношенное',
  'Battle-Scarred': 'Закалённое в боях',
};
/** The name's JSON with a Russian exterior, from its JSON text (`"… (Field-Tested)"` → `"… (После полевых испытаний)"`). */
const ruNameJson = (entry: Entry) => {
  const json = entry.nameJson;
  const open = json.lastIndexOf('(');
  const russian = open > 0 && json.endsWith(')"') ? RU_EXTERIORS[json.slice(open + 1, -2)] : undefined;
  return russian ? `${json.slice(0, open + 1)}${russian})"` : json;
};

function csmarketBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { defaults, marketAsk } = market;
  const salt = SOURCE_SALT.csmarket;
  for (const entry of defaults) {
    const quote = marketAsk(entry, 'csmarket', bucket);
    if (!quote) continue;
    const u = unit(mix(entry.hash, salt, 21));
    const keys = u < 0.05 ? 3 : u < 0.2 ? 2 : 1;
    const h = mix(entry.hash, salt, quote.moved);
    let bid: { mills: number; text: string } | null;
    const pinnedBid = entry.fixed?.bid;
    if (pinnedBid !== undefined) bid = pinnedBid;
    else if (unit(mix(h, 2)) < 0.3) bid = null;
    else {
      const mills = Math.max(1, Math.min(quote.mills - 1, Math.round(quote.mills * (0.82 + 0.15 * unit(mix(h, 3))))));
      bid = { mills, text: trimmedText(mills) };
    }
    const bidKey = mix(h, 9) % keys;
    const volume = entry.fixed?.volume7d;
    const cents = quote.mills / 10;
    const volumeCap = cents < 100 ? 1500 : cents < 1000 ? 400 : cents < 10_000 ? 60 : cents < 100_000 ? 12 : 3;
    const start = mix(h, 10) % keys;
    for (let j = 0; j < keys; j += 1) {
      // Key 0 carries the ask; the keys are written starting from `start`, so it can be anywhere.
      const k = (start + j) % keys;
      const index = rows.count;
      const mills = k === 0 ? quote.mills : quote.mills + Math.max(1, Math.round(quote.mills * (0.01 + 0.15 * unit(mix(h, k, 1)))));
      const priceJson = `"${millsText(mills)}"`;
      let buyOrder = 'null';
      if (bid && k === bidKey) buyOrder = `"${bid.text}"`;
      else if (bid && unit(mix(h, k, 4)) >= 0.5) buyOrder = `"${trimmedText(Math.max(1, Math.floor(bid.mills * (0.6 + 0.35 * unit(mix(h, k, 5))))))}"`;
      const avg = unit(mix(h, k, 7)) < 0.2 ? 'null' : `"${trimmedText(Math.max(1, Math.round(mills * (0.93 + 0.12 * unit(mix(h, k, 8))))))}"`;
      let popularity: string;
      if (volume === null) popularity = 'null';
      else if (volume !== undefined) popularity = `"${Math.floor(volume / keys) + (k < volume % keys ? 1 : 0)}"`;
      else if (unit(mix(h, k, 6)) < 0.25) popularity = 'null';
      else {
        const w = unit(mix(h, k, 11));
        popularity = `"${Math.floor(w * w * volumeCap)}"`;
      }
      if (mode === 'wrong_types' && popularity !== 'null') popularity = `{"count":${popularity}}`;
      const classid = 300_000_000 + entry.ordinal * 4 + k;
      const instanceid = k === 0 && entry.hash % 2 === 0 ? 0 : 100_000_000 + (mix(entry.hash, k, 24) % 4_000_000_000);
      const ru = unit(mix(entry.hash, k, 25)) < 0.6 ? `,"ru_name":${ruNameJson(entry)}` : '';
      rows.row(
        `"${classid}_${instanceid}":{"price":${money(priceJson, index, mode)},"buy_order":${extraMoney(buyOrder, index, mode)},` +
          `"avg_price":${extraMoney(avg, index, mode)},"popularity_7d":${popularity},${nameMember('market_hash_name', entry, index, mode)}` +
          `"text_color":"D2D2D2"${ru}}`,
      );
    }
  }
}

export const CSMARKET: Upstream = marketplaceUpstream({
  source: 'csmarket',
  routes: { '/csmarket/api/v2/prices/class_instance/USD.json': 'csmarket' },
  bodies: {
    csmarket: {
      head: (bucket, market) => `{"success":true,"time":${Math.floor((bucket * market.bucketMs) / 1000)},"currency":"USD","items":{`,
      rows: csmarketBody,
      tail: '}}',
    },
  },
  malformed: { csmarket: '{"success":true,"time":1772366400,"currency":"USD","items":{"310776668_0":{"price":"32.39' },
  rateLimited: '{"success":false,"error":"Too many requests"}',
});
