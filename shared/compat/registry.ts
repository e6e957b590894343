import { csgotraderFile, csgotraderPricesBuilder } from './csgotrader.ts';
import { buildSkinportSales, skinportItems, skinportItemsBuilder, skinportSales } from './skinport.ts';
import { steamOverview, steamOverviewBuilder } from './steam.ts';
import { steamApisItemsBuilder, steamapisItems } from './steamapis.ts';
import type { CompatBuilders } from './store.ts';
import type { CompatDocumentName, CompatHandler } from './types.ts';

/**
 * A set of the stored documents' builders, each with its own texts kept between builds
 * (shared/compat/item-texts.ts): a process builds with one set (COMPAT_BUILDERS); a new set builds as
 * if no build came before.
 */
export function createCompatBuilders(): CompatBuilders {
  return {
    'csgotrader-prices': csgotraderPricesBuilder(),
    'skinport-items': skinportItemsBuilder(),
    'skinport-sales': buildSkinportSales,
    'steam-overview': steamOverviewBuilder(),
    'steamapis-items': steamApisItemsBuilder(),
  };
}

/** Each stored document's builder (shared/compat/store.ts builds them once per snapshot). */
export const COMPAT_BUILDERS: CompatBuilders = createCompatBuilders();

/** A drop-in route: its path (Elysia syntax), the document it answers from, its handler, and its OpenAPI text. */
export type CompatRoute = { path: string; document: CompatDocumentName; handler: CompatHandler; summary: string; description: string };

export const COMPAT_ROUTES: readonly CompatRoute[] = [
  {
    path: '/compat/csgotrader/latest/:file',
    document: 'csgotrader-prices',
    handler: csgotraderFile,
    summary: 'csgotrader price files',
    description:
      'The files csgo-trader-extension and the tools built on it read from `prices.csgotrader.app/latest/`: `prices_v6.json` (every provider per name), `<provider>.json` (steam, skinport, csgotm, bitskins, csfloat, lisskins and each of our other sources) and `exchange_rates.json`, in USD. Mapping and what is absent: docs/compat/csgotrader.md.',
  },
  {
    path: '/compat/skinport/v1/items',
    document: 'skinport-items',
    handler: skinportItems,
    summary: 'Skinport /v1/items',
    description:
      'Skinport’s public items endpoint, its fields and types exactly (`app_id`, `currency` (default EUR), `tradable`). Mapping: docs/compat/skinport.md.',
  },
  {
    path: '/compat/skinport/v1/sales/history',
    document: 'skinport-sales',
    handler: skinportSales,
    summary: 'Skinport /v1/sales/history',
    description:
      'Skinport’s sales history (24 h, 7, 30 and 90 days per item and version), `market_hash_name` a comma-joined list as real clients send it. Mapping: docs/compat/skinport.md.',
  },
  {
    path: '/compat/steam/market/priceoverview',
    document: 'steam-overview',
    handler: steamOverview,
    summary: 'Steam Community Market priceoverview',
    description:
      'Steam’s `priceoverview` (`success`, `lowest_price`, `volume`, `median_price` as Steam’s localized strings) for `appid=730`, `currency=<Steam currency id>` and `market_hash_name`. Mapping: docs/compat/steam.md.',
  },
  {
    path: '/compat/steamapis/market/items/:app_id',
    document: 'steamapis-items',
    handler: steamapisItems,
    summary: 'SteamApis market items',
    description: 'SteamApis’ `/market/items/730`: `{appID, data: [...]}`, or `{name: safe price}` with `format=compact`. Mapping: docs/compat/steamapis.md.',
  },
];
