/**
 * Waxpeer in the market simulator, one of docs/design.md §13's six marketplaces (marketplaces.ts), with two endpoints:
 *
 *   /waxpeer/v1/prices?game=csgo&minified=0          {success, items:[{name, count, min, steam_price?, img?, type?, rarity_color?}]}
 *   /waxpeer/v1/prices/dopplers?game=csgo&phase=any  {success, items:[{name, phase, price, paint_index, item_id, float?}]}, one per listing
 *
 * Money: integer thousandths of USD (`2300`, generated ones to the thousandth: `937999`); plain rows
 * carry a Doppler name once (its lowest phase, count = all its listings); `steam_price` missing on
 * ~10 % of rows; the dopplers endpoint lists every listing of every phase (the cheapest at the
 * phase's ask, the others dearer). Each endpoint counts its own rows in the partial mode; a mode
 * applies to both.
 */
import { type BodyWriter, countText, extraMoney, money, nameMember } from './format.ts';
import { type Entry, EXTERIORS, exteriorOf, type Market, type MarketQuote, SOURCE_SALT } from './market.ts';
import { json, marketplaceUpstream } from './marketplaces.ts';
import { mix, unit } from './noise.ts';
import type { SimulatorMode, Upstream } from './types.ts';

const RARITY_COLORS = ['#b0c3d9', '#5e98d9', '#4b69ff', '#8847ff', '#d32ce6', '#eb4b4b', '#e4ae39'];
function waxpeerType(name: string): string {
  if (name.startsWith('★')) return /Gloves|Wraps/.test(name) ? 'Gloves' : 'Knife';
  if (name.startsWith('Sticker |')) return 'Sticker';
  if (name.startsWith('Patch |')) return 'Patch';
  if (name.startsWith('Charm |')) return 'Charm';
  if (name.includes('Graffiti |')) return 'Graffiti';
  if (name.includes('Music Kit |')) return 'Music Kit';
  if (/(Case|Capsule|Package|Box)$/.test(name)) return 'Container';
  return exteriorOf(name) ? 'Weapon' : 'Other';
}

/** Listings of one phase on waxpeer's dopplers endpoint (at most 50). */
const waxpeerListings = (market: Market, phase: Entry, quote: MarketQuote) => Math.min(50, market.marketCount(phase, 'waxpeer', quote));

function waxpeerBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { defaults, marketAsk, marketCount } = market;
  const salt = SOURCE_SALT.waxpeer;
  for (const entry of defaults) {
    const quote = marketAsk(entry, 'waxpeer', bucket);
    if (!quote) continue;
    const index = rows.count;
    const h = mix(entry.hash, salt, quote.moved);
    let count = 0;
    if (entry.phaseEntries.length > 0 && !entry.fixed) {
      for (const phase of entry.phaseEntries) {
        const phaseQuote = marketAsk(phase, 'waxpeer', bucket);
        if (phaseQuote) count += waxpeerListings(market, phase, phaseQuote);
      }
    } else count = marketCount(entry, 'waxpeer', quote);
    const steamPrice =
      unit(mix(entry.hash, salt, 30)) < 0.1
        ? ''
        : `,"steam_price":${extraMoney(String(Math.round((quote.mills * (1.12 + 0.2 * unit(mix(h, 4)))) / 10) * 10), index, mode)}`;
    const img =
      unit(mix(entry.hash, salt, 31)) < 0.05
        ? ''
        : `,"img":"https://community.cloudflare.steamstatic.com/economy/image/${entry.hash.toString(36)}${mix(entry.hash, 32).toString(36)}"`;
    rows.row(
      `{${nameMember('name', entry, index, mode)}"count":${countText(count, mode)},"min":${money(String(quote.mills), index, mode)}${steamPrice}${img},` +
        `"type":"${waxpeerType(entry.name)}","rarity_color":"${RARITY_COLORS[entry.hash % RARITY_COLORS.length]}"}`,
    );
  }
}

// Knife Doppler / Gamma Doppler paint indexes by phase (other weapons: the catalog's own).
const DOPPLER_PAINT: Record<string, number> = { ruby: 415, sapphire: 416, 'black-pearl': 417, 'phase-1': 418, 'phase-2': 419, 'phase-3': 420, 'phase-4': 421 };
const GAMMA_DOPPLER_PAINT: Record<string, number> = { emerald: 568, 'phase-1': 569, 'phase-2': 570, 'phase-3': 571, 'phase-4': 572 };
function phasePaintIndex(phase: Entry): number {
  const table = phase.name.includes('Gamma Doppler') ? GAMMA_DOPPLER_PAINT : DOPPLER_PAINT;
  return phase.name.startsWith('★') ? (table[phase.version] ?? phase.item.paint_index ?? 0) : (phase.item.paint_index ?? table[phase.version] ?? 0);
}

function waxpeerDopplersBody(market: Market, bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
  const { defaults, marketAsk } = market;
  const salt = SOURCE_SALT.waxpeer;
  for (const entry of defaults) {
    for (const phase of entry.phaseEntries) {
      const quote = marketAsk(phase, 'waxpeer', bucket);
      if (!quote) continue;
      const listings = waxpeerListings(market, phase, quote);
      const h = mix(phase.hash, salt, quote.moved);
      const start = mix(h, 10) % listings;
      const exterior = exteriorOf(phase.name);
      const paint = phasePaintIndex(phase);
      for (let j = 0; j < listings; j += 1) {
        // Slot 0 is the phase's ask; the others are dearer. Written from `start`, so the cheapest can be anywhere.
        const slot = (start + j) % listings;
        const index = rows.count;
        const mills = slot === 0 ? quote.mills : quote.mills + Math.max(1, Math.round(quote.mills * (0.01 * slot + 0.04 * unit(mix(h, slot, 11)))));
        let float = '';
        if (exterior && unit(mix(h, slot, 13)) >= 0.1) {
          const [low, high] = EXTERIORS[exterior]!.wear;
          float = `,"float":${low + (high - low) * unit(mix(h, slot, 12))}`;
        }
        rows.row(
          `{${nameMember('name', phase, index, mode)}"phase":"${phase.label}","price":${money(String(mills), index, mode)},` +
            `"paint_index":${mode === 'wrong_types' ? `"${paint}"` : paint},"item_id":"${29_000_000_000 + mix(phase.hash, slot, quote.moved, 14)}"${float}}`,
        );
      }
    }
  }
}

export const WAXPEER: Upstream = marketplaceUpstream({
  source: 'waxpeer',
  routes: { '/waxpeer/v1/prices': 'waxpeer', '/waxpeer/v1/prices/dopplers': 'waxpeer-dopplers' },
  bodies: {
    waxpeer: { head: () => '{"success":true,"items":[', rows: waxpeerBody, tail: ']}' },
    'waxpeer-dopplers': { head: () => '{"success":true,"items":[', rows: waxpeerDopplersBody, tail: ']}' },
  },
  refuse(_request, url, endpoint) {
    if (url.searchParams.get('game') !== 'csgo') return json('{"success":false,"msg":"game must be csgo in this simulator"}', 400);
    const phase = url.searchParams.get('phase');
    if (endpoint === 'waxpeer-dopplers' && phase !== null && phase !== 'any') return json('{"success":false,"msg":"phase must be any in this simulator"}', 400);
    return null;
  },
  malformed: {
    waxpeer: '{"success":true,"items":[{"name":"AK-47 | Redline (Field-Tested)","count":3,"min":93',
    'waxpeer-dopplers': '{"success":true,"items":[{"name":"★ Karambit | Doppler (Factory New)","phase":"Ruby","price":',
  },
  rateLimited: '{"success":false,"msg":"Too many requests, try again later"}',
});
