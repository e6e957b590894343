import Decimal from 'decimal.js';
import { formatSteamMoney, hundredthsOf, steamWalletCurrencyById } from '../fx/steam-currencies.ts';
import { FormatDocuments, ItemTexts, JoinedBytes, olderOf } from './item-texts.ts';
import type { BuiltCompatDocument, CompatAnswer, CompatBuilder, CompatContext, CompatDataset, CompatHandler } from './types.ts';

/**
 * Steam's community market price overview as a drop-in format (docs/design.md §20; docs/compat/steam.md):
 *
 *   GET /compat/steam/market/priceoverview/?appid=730&currency=3&market_hash_name=AK-47%20%7C%20Redline%20(Field-Tested)
 *
 * in Steam's own shape, each amount in Steam's localized money format for that wallet currency:
 *
 *   {"success":true,"lowest_price":"$2.30","volume":"1,234","median_price":"$2.40"}
 *   {"success":true,"lowest_price":"1,66€","volume":"5,638","median_price":"1,63€"}
 *   {"success":true,"lowest_price":"1496,28 руб."}                  (nothing sold in 24 hours)
 *   {"success":false}                                             (a name Steam does not know)
 *
 * `lowest_price` is our steam source's ask (its search pages), `volume` and `median_price` its 24-hour
 * sales window (priceoverview: the number sold in the last 24 hours and their median, docs/design.md §19).
 */

/** One name's Steam figures in USD: [lowest ask, 24 h volume, 24 h median], each null where Steam has none. */
type SteamOverviewEntry = [lowest: string | null, volume: number | null, median: string | null];
export type SteamOverviewDocument = { items: Record<string, SteamOverviewEntry> };

const CS2_APP_ID = '730';
/** Steam's ECurrencyCode for USD: what priceoverview answers in without a usable `currency`. */
const USD_STEAM_ID = 1;

/**
 * Every catalog name (Steam lists no phases: the default version), with what our steam source has for
 * it. Written as JSON text, item by item (ItemTexts keeps an unchanged item's text between builds).
 */
export function steamOverviewBuilder(): CompatBuilder {
  /** What an entry reads: the default version's steam price and steam windows (a run or sales read of another source changes neither). */
  const texts = new ItemTexts<Buffer>({
    same: (before, now) => {
      const a = before.versions.default;
      const b = now.versions.default;
      return a?.sources.steam === b?.sources.steam && a?.sales.steam === b?.sales.steam;
    },
  });
  const documents = new FormatDocuments();
  return (dataset: CompatDataset): BuiltCompatDocument => {
    let oldest: number | null = null;
    const parts = new JoinedBytes();
    for (const item of dataset.items) {
      const written = texts.of(item, '', () => {
        const data = item.versions.default;
        const steam = data?.sources.steam;
        let itemOldest: number | null = null;
        // A stale ask is not served as Steam's lowest price now.
        const lowest = steam?.fresh ? steam.price : null;
        if (steam?.fresh) itemOldest = steam.source_time_ms;
        const day = data?.sales.steam?.['24h'];
        if (day?.source_time_ms !== undefined) itemOldest = olderOf(itemOldest, day.source_time_ms);
        const sold = day && day.volume > 0 ? day : null;
        const entry: SteamOverviewEntry = [lowest, sold ? sold.volume : null, sold ? sold.median : null];
        return { text: Buffer.from(`${JSON.stringify(item.market_hash_name)}:${JSON.stringify(entry)}`), oldest: itemOldest, usedStamp: false };
      });
      parts.push(written.text!);
      oldest = olderOf(oldest, written.oldest);
    }
    // The text of `{items: {name: entry, …}}` (SteamOverviewDocument), each name an own key when parsed.
    return documents.document(parts, '{"items":{', '}}', oldest);
  };
}

const FAILURE: CompatAnswer = { status: 200, body: { success: false } };

/**
 * The wallet currency of `currency=<ECurrencyCode>`. Absent, not a number or not a Steam wallet
 * currency: USD, as Steam answers. A wallet currency we cannot convert to now: null.
 */
function walletCurrency(asked: string | null, context: CompatContext): string | null {
  const id = asked !== null && /^[0-9]{1,3}$/.test(asked.trim()) ? Number(asked.trim()) : USD_STEAM_ID;
  const code = (steamWalletCurrencyById(id) ?? steamWalletCurrencyById(USD_STEAM_ID)!).code;
  return context.currencies.includes(code) ? code : null;
}

/** A USD amount as Steam writes it in `code`: converted exactly, to Steam's cents (KWD's third decimal rounded half-even). */
function steamMoney(usd: string, code: string, context: CompatContext): string | null {
  const converted = context.convert(usd, code);
  if (converted === null) return null;
  const cents = new Decimal(converted).toDecimalPlaces(2, Decimal.ROUND_HALF_EVEN).toFixed();
  return formatSteamMoney(hundredthsOf(cents), code);
}

/** Steam writes its sales count with US thousands separators in every currency ("5,638" beside "1,66€"). */
export function steamVolume(volume: number): string {
  return String(volume).replace(/\B(?=(?:[0-9]{3})+$)/g, ',');
}

/**
 * `GET /compat/steam/market/priceoverview/`: one name. `{"success":false}` (HTTP 200) for a name we do
 * not know, another app, no name, or a wallet currency we cannot convert to now; fields Steam leaves
 * out when it has nothing are left out.
 */
export const steamOverview: CompatHandler = (document, request, context) => {
  const { query } = request;
  const appId = query.get('appid');
  if (appId !== null && appId.trim() !== CS2_APP_ID) return FAILURE;
  const name = query.get('market_hash_name');
  const items = (document as SteamOverviewDocument).items;
  if (name === null || !Object.hasOwn(items, name)) return FAILURE;
  const code = walletCurrency(query.get('currency'), context);
  if (code === null) return FAILURE;
  const [lowest, volume, median] = items[name]!;
  const body: { success: true; lowest_price?: string; volume?: string; median_price?: string } = { success: true };
  if (lowest !== null) {
    const text = steamMoney(lowest, code, context);
    if (text !== null) body.lowest_price = text;
  }
  if (volume !== null) {
    body.volume = steamVolume(volume);
    if (median !== null) {
      const text = steamMoney(median, code, context);
      if (text !== null) body.median_price = text;
    }
  }
  return { status: 200, body };
};
