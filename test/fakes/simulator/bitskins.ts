/**
 * BitSkins in the market simulator, one of docs/design.md §13's six marketplaces (marketplaces.ts):
 *
 *   /bitskins/market/insell/730                      {list:[{skin_id, name, price_min, price_max, price_avg, quantity}]}
 *
 * Money: integer thousandths of whole cents (`2300`). Doppler items only as phase names
 * (`★ Karambit | Doppler Ruby (Factory New)`, `… | Gamma Doppler Phase 3 (…)`), never plain.
 */
import { type BodyWriter, brokenKind, countText, extraMoney, money } from './format.ts';
import { type Entry, type Market, SOURCE_SALT } from './market.ts';
import { marketplaceUpstream } from './marketplaces.ts';
import { mix, unit } from './noise.ts';
import type { SimulatorMode, Upstream } from './types.ts';

/** BitSkins writes the phase into the name: `★ Karambit | Doppler Ruby (Factory New)`. */
const bitskinsName = (phase: Entry) => {
  const exterior = /\s\(([^()]+)\)$/.exec(phase.name);
  return JSON.stringify(exterior ? `${phase.name.slice(0, exterior.index)} ${phase.label} (${exterior[1]})` : `${phase.name} ${phase.label}`);
};

function bitskinsBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { defaults, marketAsk, marketCount } = market;
  const salt = SOURCE_SALT.bitskins;
  for (const entry of defaults) {
    const leaves = entry.phaseEntries.length > 0 ? entry.phaseEntries : [entry];
    for (const [p, leaf] of leaves.entries()) {
      const quote = marketAsk(leaf, 'bitskins', bucket);
      if (!quote) continue;
      const index = rows.count;
      const quantity = marketCount(leaf, 'bitskins', quote);
      const h = mix(leaf.hash, salt, quote.moved);
      let max = quote.mills;
      let avg = quote.mills;
      if (quantity > 1) {
        max = Math.round((quote.mills * (1.2 + 2 * unit(mix(h, 1)))) / 10) * 10;
        avg = quote.mills + Math.round(((max - quote.mills) * (0.1 + 0.3 * unit(mix(h, 2)))) / 10) * 10;
      }
      const skinId = 1 + entry.ordinal * 9 + p;
      const name = leaf.label ? bitskinsName(leaf) : leaf.nameJson;
      rows.row(
        `{"skin_id":${mode === 'wrong_types' ? `"${skinId}"` : skinId},${brokenKind(mode, index) === 0 ? '' : `"name":${name},`}` +
          `"price_min":${money(String(quote.mills), index, mode)},"price_max":${extraMoney(String(max), index, mode)},` +
          `"price_avg":${extraMoney(String(avg), index, mode)},"quantity":${countText(quantity, mode)}}`,
      );
    }
  }
}

export const BITSKINS: Upstream = marketplaceUpstream({
  source: 'bitskins',
  routes: { '/bitskins/market/insell/730': 'bitskins' },
  bodies: { bitskins: { head: () => '{"list":[', rows: bitskinsBody, tail: ']}' } },
  malformed: { bitskins: '{"list":[{"skin_id":1,"name":"AK-47 | Redline (Field-Tested)","price_min":12' },
  rateLimited: '{"code":"TOO_MANY_REQUESTS","message":"Too many requests"}',
});
