import Decimal from 'decimal.js';
import { z } from 'zod';
import { kitCatalog } from '../catalog/kit-catalog.ts';
import { phaseVersionOfPaint } from '../inspect/insights.ts';
import type { Queryable } from '../platform/db.ts';
import { SOURCE_NAMES } from '../platform/source-names.ts';

/**
 * The one valuation rule (docs/design.md §14), used by inventories (`valuation=`) and trade intents: an item
 * is worth the requested marketplace's latest price of (its catalog item, its Doppler phase version
 * when its paint index has one, else `default`), with no fallback from a phase to `default` (a Ruby
 * is not worth a plain Doppler's price). The stickers and charms applied to it are valued as their
 * own catalog items (`Sticker | …`, `Charm | …`, version `default`) in the same marketplace, each
 * occurrence counted. `total` is the sum of the priced parts; `unpriced` names the parts without a
 * price (`item`, `sticker:<id>`, `charm:<id>`, once each). Sums are exact (decimal.js), in USD: a
 * conversion to another currency converts each total once, never a sum of converted parts.
 */

export const assetValueSchema = z
  .object({
    marketplace: z.enum(SOURCE_NAMES),
    price: z
      .string()
      .nullable()
      .describe('The item’s own latest price at that marketplace (its Doppler phase when it has one; no fallback to `default`); null when it has none'),
    currency: z.string().describe('USD, or the `?currency=` asked for'),
    stickers_total: z.string().describe('The applied stickers, each valued as its own catalog item'),
    charms_total: z.string().describe('The attached charms, each valued as its own catalog item'),
    total: z.string().describe('price + stickers_total + charms_total, over the priced parts'),
    unpriced: z.array(z.string()).describe('Parts without a price: `item`, `sticker:<sticker_id>`, `charm:<charm_id>`'),
  })
  .describe('The asset’s value at the requested marketplace (docs/design.md §14: one rule for inventories and trade intents)');

export type AssetValue = z.infer<typeof assetValueSchema>;

/** What valuing an asset needs: its catalog item, paint index, and the kits applied to it. */
export type ValuationInput = {
  catalog_id: string | null;
  paint_index: number | null | undefined;
  stickers?: readonly { sticker_id: number }[] | undefined;
  charms?: readonly { charm_id: number }[] | undefined;
};

/** The price version an asset is valued at: its Doppler phase when it has one, else `default`. */
export function priceVersionOf(paintIndex: number | null | undefined): string {
  return phaseVersionOfPaint(paintIndex ?? undefined) ?? 'default';
}

const keyOf = (catalogId: string, version: string) => `${catalogId}\t${version}`;

/**
 * Latest prices of one marketplace for (catalog_id, version) pairs, in one query: a Map keyed
 * `catalog_id\tversion` to the decimal string.
 */
export async function latestPricesOf(
  db: Queryable,
  marketplace: string,
  keys: readonly { catalog_id: string; version: string }[],
): Promise<Map<string, string>> {
  if (keys.length === 0) return new Map();
  const rows = await db<{ catalog_id: string; version: string; price: string }[]>`
    select p.catalog_id, p.version, p.price::text as price
    from unnest(${keys.map((key) => key.catalog_id)}::text[], ${keys.map((key) => key.version)}::text[]) as wanted (catalog_id, version)
    join latest_prices p on p.catalog_id = wanted.catalog_id and p.version = wanted.version and p.source = ${marketplace}`;
  return new Map(rows.map((row) => [keyOf(row.catalog_id, row.version), row.price]));
}

/** The exact sum of decimal strings, written with the most fraction digits among them (at least 2). */
export function sumDecimals(values: readonly string[]): string {
  let sum = new Decimal(0);
  let places = 2;
  for (const value of values) {
    sum = sum.plus(value);
    const point = value.indexOf('.');
    if (point >= 0) places = Math.max(places, value.length - point - 1);
  }
  return sum.toFixed(places);
}

/** Each input's value at `marketplace` (same order), with one query for every item, sticker and charm. */
export async function valueAssets(db: Queryable, marketplace: (typeof SOURCE_NAMES)[number], inputs: readonly ValuationInput[]): Promise<AssetValue[]> {
  const catalog = kitCatalog();
  const wanted = new Map<string, { catalog_id: string; version: string }>();
  const want = (catalogId: string, version: string) => {
    const key = keyOf(catalogId, version);
    if (!wanted.has(key)) wanted.set(key, { catalog_id: catalogId, version });
    return key;
  };
  const plans = inputs.map((input) => ({
    item: input.catalog_id === null ? null : want(input.catalog_id, priceVersionOf(input.paint_index)),
    stickers: (input.stickers ?? []).map((sticker) => {
      const catalogId = catalog.stickers.get(sticker.sticker_id);
      return { name: `sticker:${sticker.sticker_id}`, key: catalogId === undefined ? null : want(catalogId, 'default') };
    }),
    charms: (input.charms ?? []).map((charm) => {
      const catalogId = catalog.charms.get(charm.charm_id);
      return { name: `charm:${charm.charm_id}`, key: catalogId === undefined ? null : want(catalogId, 'default') };
    }),
  }));
  const prices = await latestPricesOf(db, marketplace, [...wanted.values()]);
  return plans.map((plan) => {
    const unpriced: string[] = [];
    const priceOf = (key: string | null, name: string) => {
      const price = key === null ? undefined : prices.get(key);
      if (price === undefined && !unpriced.includes(name)) unpriced.push(name);
      return price;
    };
    const price = priceOf(plan.item, 'item') ?? null;
    const stickerPrices = plan.stickers.map((part) => priceOf(part.key, part.name)).filter((value): value is string => value !== undefined);
    const charmPrices = plan.charms.map((part) => priceOf(part.key, part.name)).filter((value): value is string => value !== undefined);
    const stickersTotal = sumDecimals(stickerPrices);
    const charmsTotal = sumDecimals(charmPrices);
    return {
      marketplace,
      price,
      currency: 'USD',
      stickers_total: stickersTotal,
      charms_total: charmsTotal,
      total: sumDecimals([...(price === null ? [] : [price]), stickersTotal, charmsTotal]),
      unpriced,
    };
  });
}

/** The valuation input of a stored inventory record (its `state`: paint index, stickers, charms). */
export function valuationInputOf(catalogId: string | null, record: unknown): ValuationInput {
  const state = (record as { state?: { paint_index?: unknown; stickers?: unknown; charms?: unknown } } | null)?.state;
  const list = <T>(value: unknown, field: string): T[] => (Array.isArray(value) ? (value.filter((entry) => typeof entry?.[field] === 'number') as T[]) : []);
  return {
    catalog_id: catalogId,
    paint_index: typeof state?.paint_index === 'number' ? state.paint_index : null,
    stickers: list<{ sticker_id: number }>(state?.stickers, 'sticker_id'),
    charms: list<{ charm_id: number }>(state?.charms, 'charm_id'),
  };
}

/**
 * A trade intent's valuation (docs/design.md §14): each side the exact sum of its assets' `total`s; the
 * assets whose item itself has no price are listed (their stickers and charms still count).
 */
export async function valueTradeSides(
  db: Queryable,
  marketplace: (typeof SOURCE_NAMES)[number],
  sides: { give: readonly ({ asset_id: string } & ValuationInput)[]; receive: readonly ({ asset_id: string } & ValuationInput)[] },
): Promise<{ give_total: string; receive_total: string; unpriced: string[] }> {
  const assets = [...sides.give, ...sides.receive];
  const values = await valueAssets(db, marketplace, assets);
  const totalOf = (from: number, to: number) => sumDecimals(values.slice(from, to).map((value) => value.total));
  return {
    give_total: totalOf(0, sides.give.length),
    receive_total: totalOf(sides.give.length, assets.length),
    unpriced: assets
      .filter((_, index) => values[index]!.price === null)
      .map((asset) => asset.asset_id)
      .sort(),
  };
}
