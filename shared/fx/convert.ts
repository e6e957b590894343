import Decimal from 'decimal.js';
import { FX_SOURCE, type FxRates } from './repository.ts';

/**
 * Conversion of stored USD amounts into another currency (DESIGN 14): A × rate(X) / rate(USD),
 * with both rates per 1 EUR from the same ECB file, computed exactly with decimal.js and rounded
 * once, half-even, to X's ISO 4217 minor units. Amounts and rates are decimal strings in and out:
 * nothing passes through a JS float. A total is converted once from its USD total by the caller,
 * never summed from converted parts.
 */

/**
 * ISO 4217 exponents (list one) that are not 2. Of the currencies the ECB file lists today (USD JPY
 * BGN CZK DKK GBP HUF PLN RON SEK CHF ISK NOK TRY AUD BRL CAD CNY HKD IDR ILS INR KRW MXN MYR NZD PHP
 * SGD THB ZAR) and EUR, only JPY, ISK and KRW have 0; the others, HUF and IDR included, have 2 (HUF's
 * official exponent is 2, though cash has no fillér). The other 0- and 3-decimal currencies are
 * listed too, so a currency the ECB adds later gets its right exponent; TRL is one it used to list.
 */
const MINOR_UNITS: Readonly<Record<string, number>> = {
  // 0 decimals
  BIF: 0, CLP: 0, DJF: 0, GNF: 0, ISK: 0, JPY: 0, KMF: 0, KRW: 0, PYG: 0, RWF: 0, TRL: 0, UGX: 0,
  UYI: 0, VND: 0, VUV: 0, XAF: 0, XOF: 0, XPF: 0,
  // 3 decimals
  BHD: 3, IQD: 3, JOD: 3, KWD: 3, LYD: 3, OMR: 3, TND: 3,
};

/**
 * Decimal places of a currency's amounts: its ISO 4217 exponent. A code not in the table (a
 * currency the ECB might start publishing) falls back to 2, the exponent of most currencies.
 */
export function minorUnits(currency: string): number {
  return MINOR_UNITS[currency] ?? 2;
}

/** `?currency=` named something the latest rates cannot convert to. */
export class UnsupportedCurrencyError extends Error {
  constructor(readonly currency: string) {
    super(`unsupported currency ${JSON.stringify(currency)}`);
    this.name = 'UnsupportedCurrencyError';
  }
}

/** EUR and every currency of the latest file (USD among them), upper-case ISO 4217 codes, sorted. */
export function supportedCurrencies(rates: FxRates): string[] {
  return [...rates.rates.keys()].sort();
}

/** Whether `currency` is exactly one of supportedCurrencies (case-sensitive: `usd` and `''` are not). */
export function isSupportedCurrency(rates: FxRates, currency: string): boolean {
  return rates.rates.has(currency);
}

/** The `fx` object of a converted answer (DESIGN 14). */
export type FxQuote = { base: 'USD'; quote: string; rate: string; as_of: string; source: typeof FX_SOURCE };

const AMOUNT = /^-?[0-9]+(\.[0-9]+)?$/;

/** Digits of a decimal string's integer significand (`"0.0350"` → 3: `350`), at least 1. */
function significantDigits(decimal: string): number {
  // Sign and point skipped, then leading zeros; a loop rather than three regular expressions: a
  // price list converts hundreds of thousands of amounts.
  let digits = 0;
  for (let index = 0; index < decimal.length; index += 1) {
    const code = decimal.charCodeAt(index);
    if (code === 0x2d || code === 0x2e || (digits === 0 && code === 0x30)) continue;
    digits += 1;
  }
  return Math.max(1, digits);
}

function decimalPlaces(decimal: string): number {
  const point = decimal.indexOf('.');
  return point < 0 ? 0 : decimal.length - point - 1;
}

const decimalsByPrecision = new Map<number, typeof Decimal>();

function decimalWithPrecision(precision: number): typeof Decimal {
  let constructor = decimalsByPrecision.get(precision);
  if (!constructor) {
    constructor = Decimal.clone({ precision, rounding: Decimal.ROUND_HALF_EVEN });
    decimalsByPrecision.set(precision, constructor);
  }
  return constructor;
}

/**
 * A × r / u rounded half-even to `places` decimals, exactly, where A, r, u are decimal strings
 * (u > 0).
 *
 * Why the precision below makes the one final rounding exact. Write A = a/10^α, r = x/10^β,
 * u = v/10^γ with integers a, x, v. The product A × r is exact once the precision holds its
 * sig(a) + sig(x) digits. The quotient q = a·x·10^γ / (v·10^(α+β)) is in general not a finite
 * decimal, so decimal.js rounds it to P significant digits: |q' − q| ≤ 10^(E−P+1), E = ⌊log10 q⌋.
 * Half-even at `places` = d goes wrong only if q' and q sit on different sides of a tie
 * t = (2k+1)/(2·10^d) (or q' lands on one q is not on). Bringing q − t to one denominator,
 *   q − t = (2·10^d·a·x·10^γ − (2k+1)·v·10^(α+β)) / (2·10^(d+α+β)·v),
 * an integer over that denominator: when q is not a tie, |q − t| ≥ 1 / (2·10^(d+α+β)·v). So
 * 10^(E−P+1) < 1 / (2·10^(d+α+β)·v) suffices, i.e. P > E + 1 + d + α + β + log10(2v); with
 * E ≤ log10 q = log10(a·x) + γ − α − β − log10(v) the v and α, β cancel: P > log10(a·x) + γ + d +
 * 1 + log10 2, which P = sig(a) + sig(x) + γ + d + 2 satisfies. When q is itself a tie it has at
 * most E + 1 + d + 1 ≤ P significant digits, so decimal.js (correctly rounded) returns it exactly
 * and half-even sees the true tie. Nothing is rounded before that final step.
 */
function exactRatio(amount: string, rate: string, usdRate: string, places: number): Decimal {
  return preparedRatio(rate, usdRate, places)(amount);
}

/**
 * exactRatio with `rate`, `usdRate` and `places` fixed: the rates are parsed and their part of the
 * precision counted once (a Decimal made from a string holds it exactly, whatever the precision;
 * only operations round), which makes converting a whole list about twice as fast.
 */
function preparedRatio(rate: string, usdRate: string, places: number): (amount: string) => Decimal {
  const rateDecimal = new Decimal(rate);
  const usdRateDecimal = new Decimal(usdRate);
  const fixedDigits = significantDigits(rate) + decimalPlaces(usdRate) + places + 2;
  return (amount) => {
    const Exact = decimalWithPrecision(significantDigits(amount) + fixedDigits);
    return new Exact(amount).times(rateDecimal).dividedBy(usdRateDecimal).toDecimalPlaces(places, Decimal.ROUND_HALF_EVEN);
  };
}

function ratesFor(rates: FxRates, currency: string): { rate: string; usdRate: string } {
  const rate = rates.rates.get(currency);
  if (rate === undefined) throw new UnsupportedCurrencyError(currency);
  const usdRate = rates.rates.get('USD');
  // The parser keeps no day without a USD rate (shared/fx/ecb.ts), so this is a broken invariant.
  if (usdRate === undefined) throw new Error(`fx rates of ${rates.as_of} have no USD rate`);
  return { rate, usdRate };
}

/** The quote of USD → `currency`: rate = rate(X) / rate(USD), half-even to 8 places (informative). */
export function quoteFor(rates: FxRates, currency: string): FxQuote {
  const { rate, usdRate } = ratesFor(rates, currency);
  return { base: 'USD', quote: currency, rate: exactRatio('1', rate, usdRate, 8).toFixed(8), as_of: rates.as_of, source: FX_SOURCE };
}

/**
 * A converter from USD amounts to `currency` under `rates`, for converting many amounts with the
 * same rates (a whole price list): the lookups are done once. USD → USD is the identity (the amount
 * comes back exactly as given). Throws UnsupportedCurrencyError for a currency the rates lack.
 */
export function usdConverter(rates: FxRates, currency: string): (amount: string) => string {
  if (currency === 'USD') {
    return (amount) => {
      if (!AMOUNT.test(amount)) throw new RangeError(`not a decimal amount: ${JSON.stringify(amount)}`);
      return amount;
    };
  }
  const { rate, usdRate } = ratesFor(rates, currency);
  const places = minorUnits(currency);
  const ratio = preparedRatio(rate, usdRate, places);
  return (amount) => {
    if (!AMOUNT.test(amount)) throw new RangeError(`not a decimal amount: ${JSON.stringify(amount)}`);
    const converted = ratio(amount);
    // -0.004 rounds to zero: written "0.00", never "-0.00".
    return converted.isZero() ? new Decimal(0).toFixed(places) : converted.toFixed(places);
  };
}

/** One USD amount (decimal string) in `currency`, half-even to its minor units (see usdConverter). */
export function convertUsd(amount: string, rates: FxRates, currency: string): string {
  return usdConverter(rates, currency)(amount);
}

/**
 * An amount in `currency` (EUR, or any currency of the rates) as USD: A × rate(USD) / rate(X), exactly,
 * rounded once half-even to 2 places (DESIGN 14: skinbaron's EUR prices, stored in USD at the newest
 * rates). Throws UnsupportedCurrencyError for a currency the rates lack.
 */
export function convertToUsd(amount: string, rates: FxRates, currency: string): string {
  if (!AMOUNT.test(amount)) throw new RangeError(`not a decimal amount: ${JSON.stringify(amount)}`);
  const { rate, usdRate } = ratesFor(rates, currency);
  const converted = exactRatio(amount, usdRate, rate, 2);
  return converted.isZero() ? '0.00' : converted.toFixed(2);
}
