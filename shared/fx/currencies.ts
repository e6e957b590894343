import type { Queryable } from '../platform/db.ts';
import { minorUnits, quoteFor } from './convert.ts';
import { FX_SOURCE, type FxRates, type FxSourceName, findLatestRates } from './repository.ts';
import { STEAM_IMPLIED_CURRENCIES } from './steam-currencies.ts';
import { findSteamImpliedStates, STEAM_IMPLIED_SOURCE, type SteamImpliedState } from './steam-implied-repository.ts';

/**
 * Every currency `?currency=` can name (docs/design.md §14 and §19), and where its rate comes from: EUR and
 * every currency of the newest ECB file (`ecb`), then the Steam wallet currencies the ECB does not
 * publish, each with the rate of its latest Steam basket read (`steam-implied`) or not offered with
 * the reason. A currency the ECB publishes is always converted at the ECB's rate.
 */

export const NOT_READ_YET_REASON = 'no Steam basket read has completed yet';

export type CurrencyTable = {
  /** The newest ECB set, null before the first successful fetch. */
  ecb: FxRates | null;
  /** Latest outcome per Steam-implied currency (absent: never read). */
  steam: ReadonlyMap<string, SteamImpliedState>;
};

export async function loadCurrencyTable(db: Queryable): Promise<CurrencyTable> {
  const [ecb, steam] = await Promise.all([findLatestRates(db), findSteamImpliedStates(db)]);
  return { ecb, steam };
}

export type CurrencyResolution =
  | { kind: 'rates'; rates: FxRates }
  /** A Steam-implied currency that is not offered now, and why. */
  | { kind: 'unavailable'; reason: string }
  | { kind: 'unknown' };

// The rate set of a Steam-implied currency: its own rate against USD at '1', so conversion is A × rate.
const steamRateSets = new WeakMap<SteamImpliedState, FxRates>();

/** Which rates convert USD to `currency` (not USD itself) under `table`. */
export function resolveCurrency(table: CurrencyTable, currency: string): CurrencyResolution {
  if (table.ecb?.rates.has(currency)) return { kind: 'rates', rates: table.ecb };
  if (!STEAM_IMPLIED_CURRENCIES.includes(currency)) return { kind: 'unknown' };
  const state = table.steam.get(currency);
  if (!state || state.rate === null || state.as_of === null) return { kind: 'unavailable', reason: state?.reason ?? NOT_READ_YET_REASON };
  let rates = steamRateSets.get(state);
  if (!rates) {
    rates = {
      as_of: state.as_of,
      rates: new Map([
        [currency, state.rate],
        ['USD', '1'],
      ]),
      fetched_at: state.read_at,
      source: STEAM_IMPLIED_SOURCE,
    };
    steamRateSets.set(state, rates);
  }
  return { kind: 'rates', rates };
}

/** The codes `?currency=` converts to now (USD first, then sorted), for error messages. */
export function offeredCurrencies(table: CurrencyTable): string[] {
  const codes = new Set<string>(table.ecb ? table.ecb.rates.keys() : []);
  for (const currency of STEAM_IMPLIED_CURRENCIES) if (resolveCurrency(table, currency).kind === 'rates') codes.add(currency);
  codes.delete('USD');
  return ['USD', ...[...codes].sort()];
}

export type OfferedCurrency = {
  code: string;
  /** `base` for USD (prices are stored in USD: nothing is converted). */
  source: FxSourceName | 'base';
  minor_units: number;
  /** Units per USD, 8 places (`fx.rate` of a converted answer); null for USD. */
  rate: string | null;
  /** The ECB date or the Steam read's date (`fx.as_of`); null for USD. */
  as_of: string | null;
};

export type UnavailableCurrency = { code: string; source: FxSourceName; reason: string };

/** GET /v2/meta/currencies: what is offered, sorted by code, and what is not, with the reason. */
export function currencyList(table: CurrencyTable): { base: 'USD'; currencies: OfferedCurrency[]; unavailable: UnavailableCurrency[] } {
  const currencies: OfferedCurrency[] = [{ code: 'USD', source: 'base', minor_units: minorUnits('USD'), rate: null, as_of: null }];
  const unavailable: UnavailableCurrency[] = [];
  if (table.ecb) {
    for (const code of table.ecb.rates.keys()) {
      if (code === 'USD') continue;
      const quote = quoteFor(table.ecb, code);
      currencies.push({ code, source: FX_SOURCE, minor_units: minorUnits(code), rate: quote.rate, as_of: quote.as_of });
    }
  } else {
    unavailable.push({
      code: 'EUR',
      source: FX_SOURCE,
      reason: 'no ECB reference rates have been fetched yet (EUR and the ECB currencies are offered once they are)',
    });
  }
  for (const code of STEAM_IMPLIED_CURRENCIES) {
    if (table.ecb?.rates.has(code)) continue;
    const resolution = resolveCurrency(table, code);
    if (resolution.kind === 'rates') {
      const quote = quoteFor(resolution.rates, code);
      currencies.push({ code, source: STEAM_IMPLIED_SOURCE, minor_units: minorUnits(code), rate: quote.rate, as_of: quote.as_of });
    } else if (resolution.kind === 'unavailable') {
      unavailable.push({ code, source: STEAM_IMPLIED_SOURCE, reason: resolution.reason });
    }
  }
  const byCode = (a: { code: string }, b: { code: string }) => (a.code < b.code ? -1 : a.code > b.code ? 1 : 0);
  return { base: 'USD', currencies: currencies.sort(byCode), unavailable: unavailable.sort(byCode) };
}
