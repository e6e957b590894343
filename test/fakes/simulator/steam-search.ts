import { withThousands } from '../../../shared/sources/money.ts';
import type { SimulatorMode } from './types.ts';

/**
 * Steam's market search, `GET /steam/market/search/render/?appid=730&norender=1&count=…&start=…
 * &sort_column=name&sort_dir=asc&currency=1` (docs/design.md §19), for the market simulator: the JSON Steam
 * answers with `norender=1`, `{success, start, pagesize, total_count, searchdata, results:[…]}`, one
 * row per item (Steam has no phase rows: a Doppler's row is its cheapest phase), sorted by name. Each
 * row's `sell_price` is the simulator's steam ask in integer cents (priceoverview's `lowest_price`),
 * `sell_listings` its quantity (priceoverview's `volume` generator; 0 with `sell_price` 0 when nothing
 * is listed, as Steam lists such items), `asset_description.icon_url` a stable made-up icon per name.
 * `count` is capped at 100 as on Steam (default 10); a `start` past the end answers no rows.
 *
 * The simulator's fail, stall, rate_limit (429, body `null`) and malformed (truncated JSON) modes are
 * answered before this is called; here:
 *   partial      every third row of the market (its position, index % 3 === 1) broken in turn: no
 *                `hash_name`, `sell_price` an object `{"amount":…}`, a negative `sell_price`;
 *   wrong_types  every row's `sell_price` an object (even positions) or `true` (odd), and
 *                `sell_listings` a string: the envelope is right, no row is usable.
 */

/** What the simulator knows of one name now. */
export type SteamSearchListing = {
  /** The lowest ask in cents; null when nothing is listed. */
  cents: number | null;
  listings: number;
  /** A stable hash of the name (the simulator's own): icon and class ids are made from it. */
  hash: number;
};

const PAGE_CAP = 100;
const DEFAULT_COUNT = 10;
const APP_ICON = 'https://community.fastly.steamstatic.com/public/images/apps/730/8dbc71957312bbd3baea65848b545be9eae2a355.jpg';
const ICON_ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/** A made-up icon_url of Steam's shape (URL-safe base64, ~100 characters), stable per name. */
function iconUrlOf(hash: number): string {
  let state = hash >>> 0 || 1;
  let text = '-9a81dlWLwJ2UUGcVs_nsVtzdOEdtWwKGZZLQHTxDZ7I56KU0Zwwo4NUX4oFJZEHLbXH5ApeO4YmlhxYQknCRvCo04DEVlxkKgpo';
  for (let i = 0; i < 48; i += 1) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    text += ICON_ALPHABET[(state >>> 0) % 64];
  }
  return text;
}

function usdText(cents: number): string {
  return `$${withThousands(String(Math.floor(cents / 100)))}.${String(cents % 100).padStart(2, '0')}`;
}

/** Steam's item type line and name colour, roughly by kind (the adapter reads neither). */
function kindOf(name: string): { type: string; color: string } {
  if (name.startsWith('★')) return { type: /Gloves|Wraps/.test(name) ? '★ Extraordinary Gloves' : '★ Covert Knife', color: '8650AC' };
  if (name.startsWith('Sticker |')) return { type: 'High Grade Sticker', color: 'D2D2D2' };
  if (/(Case|Capsule|Package)$/.test(name)) return { type: 'Base Grade Container', color: 'D2D2D2' };
  return {
    type: name.includes('StatTrak™') ? 'StatTrak™ Mil-Spec Grade Rifle' : 'Mil-Spec Grade Rifle',
    color: name.includes('StatTrak™') ? 'CF6A32' : 'D2D2D2',
  };
}

const json = (text: string, status = 200) => new Response(text, { status, headers: { 'content-type': 'application/json; charset=utf-8' } });

/**
 * The search endpoint over the simulator's items (`items()`, read per request: items added while it
 * runs are listed from then on), sorted here by name, each item's listing read at request time.
 */
export function createSteamSearch<Item>(
  items: () => readonly Item[],
  nameOf: (item: Item) => string,
  listingOf: (item: Item) => SteamSearchListing,
): (url: URL, mode: SimulatorMode) => Response {
  let known: readonly Item[] = [];
  let knownLength = -1;
  let sorted: { item: Item; name: string; quoted: string }[] = [];
  const market = () => {
    const current = items();
    if (current !== known || current.length !== knownLength) {
      known = current;
      knownLength = current.length;
      const byName = new Map(current.map((item) => [nameOf(item), item]));
      sorted = [...byName.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, item]) => ({ item, name, quoted: JSON.stringify(name) }));
    }
    return sorted;
  };
  return (url, mode) => {
    const query = url.searchParams;
    if (query.get('appid') !== '730' || query.get('norender') !== '1' || (query.has('currency') && query.get('currency') !== '1')) {
      return json('{"success":false}', 400);
    }
    const startText = query.get('start') ?? '0';
    const countText = query.get('count') ?? String(DEFAULT_COUNT);
    const start = /^[0-9]{1,9}$/.test(startText) ? Number(startText) : 0;
    const count = /^[0-9]{1,9}$/.test(countText) && Number(countText) > 0 ? Math.min(PAGE_CAP, Number(countText)) : DEFAULT_COUNT;
    const listed = market();
    const total = listed.length;
    const rows: string[] = [];
    for (let index = start; index < Math.min(total, start + count); index += 1) {
      const { item, name, quoted } = listed[index]!;
      const listing = listingOf(item);
      const forSale = listing.cents !== null && listing.listings > 0;
      const cents = forSale ? listing.cents! : 0;
      let hashName = `"hash_name":${quoted},`;
      let sellPrice = String(cents);
      let sellListings = String(forSale ? listing.listings : 0);
      if (mode === 'wrong_types') {
        sellPrice = index % 2 === 0 ? `{"amount":${cents}}` : 'true';
        sellListings = `"${sellListings}"`;
      } else if (mode === 'partial' && index % 3 === 1) {
        const kind = Math.floor(index / 3) % 3;
        if (kind === 0) hashName = '';
        else if (kind === 1) sellPrice = `{"amount":${cents}}`;
        else sellPrice = `-${Math.max(1, cents)}`;
      }
      const { type, color } = kindOf(name);
      const classid = String(1_000_000_000 + (listing.hash % 3_000_000_000));
      rows.push(
        `{"name":${quoted},${hashName}"sell_listings":${sellListings},"sell_price":${sellPrice},"sell_price_text":${JSON.stringify(usdText(cents))},` +
          `"app_icon":${JSON.stringify(APP_ICON)},"app_name":"Counter-Strike 2",` +
          `"asset_description":{"appid":730,"classid":"${classid}","instanceid":"0","background_color":"","icon_url":"${iconUrlOf(listing.hash)}",` +
          `"tradable":1,"name":${quoted},"name_color":"${color}","type":${JSON.stringify(type)},"market_name":${quoted},"market_hash_name":${quoted},"commodity":0},` +
          // Steam's sale_price_text sits a little below sell_price_text; its meaning is undocumented and nothing reads it.
          `"sale_price_text":${JSON.stringify(usdText(forSale ? Math.max(1, Math.round(cents * 0.96)) : 0))}}`,
      );
    }
    const searchdata = `{"query":"","search_descriptions":false,"total_count":${total},"pagesize":${count},"prefix":"searchResults","class_prefix":"market"}`;
    return json(`{"success":true,"start":${start},"pagesize":${count},"total_count":${total},"searchdata":${searchdata},"results":[${rows.join(',')}]}`);
  };
}
