import { decimalJsRatio } from './convert-decimal.ts';
import { FX_SOURCE, type FxRates, type FxSourceName } from './repository.ts';

/**
 * Conversion of stored USD amounts into another currency (docs/design.md §14): A × rate(X) / rate(USD),
 * with both rates per 1 EUR from the same ECB file, computed exactly in integer arithmetic (the
 * result decimal.js gave, shared/fx/convert-decimal.ts) and rounded once, half-even, to X's ISO 4217 minor units. Amounts and rates are decimal strings in and out:
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
  BIF: 0,
  CLP: 0,
  DJF: 0,
  GNF: 0,
  ISK: 0,
  JPY: 0,
  KMF: 0,
  KRW: 0,
  PYG: 0,
  RWF: 0,
  TRL: 0,
  UGX: 0,
  UYI: 0,
  VND: 0,
  VUV: 0,
  XAF: 0,
  XOF: 0,
  XPF: 0,
  // 3 decimals
  BHD: 3,
  IQD: 3,
  JOD: 3,
  KWD: 3,
  LYD: 3,
  OMR: 3,
  TND: 3,
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

/** The `fx` object of a converted answer (docs/design.md §14). */
export type FxQuote = { base: 'USD'; quote: string; rate: string; as_of: string; source: FxSourceName };

const AMOUNT = /^-?[0-9]+(\.[0-9]+)?$/;

/**
 * A × r / u rounded half-even to `places` decimals, exactly, where A, r, u are plain decimal strings
 * (`-?digits[.digits]`, u > 0), in integer arithmetic. Write A = a/10^α, r = x/10^β, u = v/10^γ with
 * integers a, x, v. Then A × r / u × 10^d = a·x·10^(γ+d) / (v·10^(α+β)): with e = γ + d − α − β that
 * is N / D with N = a·x·10^max(e, 0) and D = v·10^max(−e, 0), both integers. One division with
 * remainder gives the quotient Q and remainder R; half-even rounds up when 2R > D, or when 2R = D
 * and Q is odd. Nothing is rounded before that, so the result is the exact quotient's half-even
 * rounding, as decimal.js gave it (shared/fx/convert-decimal.ts, the reference the property test of
 * test/fx/fx-convert.test.ts compares this with). The rates' integers are made once per converter.
 *
 * When a·x·10^max(e,0) and D stay below 2^53 the same integers are exact in JS numbers, and `%` of
 * two integral doubles is exact too, so that case (nearly every price) skips BigInt; larger ones use it.
 */
const PLAIN_DECIMAL = /^[0-9]+(\.[0-9]+)?$/;
const POWERS_OF_TEN: number[] = Array.from({ length: 16 }, (_, power) => 10 ** power);
const MAX_EXACT = Number.MAX_SAFE_INTEGER;

/** An integer of decimal digits (sign and point removed) as text; and its decimal places. */
function splitDecimal(decimal: string): { digits: string; places: number; negative: boolean } {
  const negative = decimal.charCodeAt(0) === 0x2d;
  const unsigned = negative ? decimal.slice(1) : decimal;
  const point = unsigned.indexOf('.');
  if (point < 0) return { digits: unsigned, places: 0, negative };
  return { digits: unsigned.slice(0, point) + unsigned.slice(point + 1), places: unsigned.length - point - 1, negative };
}

/** `magnitude` (≥ 0) as a decimal string with `places` decimals, a minus sign when `negative` and not zero. */
function formatScaled(magnitude: string, places: number, negative: boolean): string {
  const sign = negative && magnitude !== '0' ? '-' : '';
  if (places === 0) return sign + magnitude;
  const padded = magnitude.length <= places ? '0'.repeat(places - magnitude.length + 1) + magnitude : magnitude;
  const cut = padded.length - places;
  return `${sign}${padded.slice(0, cut)}.${padded.slice(cut)}`;
}

/**
 * exactRatio with `rate`, `usdRate` and `places` fixed (a whole list is converted with one rate
 * pair): the rates' integers are made once. Amounts must be decimal strings (the callers check).
 */
function preparedRatio(rate: string, usdRate: string, places: number): (amount: string) => string {
  // Rates are Postgres numeric text (never an exponent); anything else keeps the decimal.js path.
  if (!PLAIN_DECIMAL.test(rate) || !PLAIN_DECIMAL.test(usdRate)) return (amount) => decimalJsRatio(amount, rate, usdRate, places);
  const r = splitDecimal(rate);
  const u = splitDecimal(usdRate);
  const xBig = BigInt(r.digits);
  const vBig = BigInt(u.digits);
  const xNumber = Number(r.digits);
  const vNumber = Number(u.digits);
  const numberSafe = xNumber <= MAX_EXACT && vNumber <= MAX_EXACT;
  // e = γ + d − α − β; everything but α is fixed here.
  const fixedExponent = u.places + places - r.places;
  return (amount) => {
    const a = splitDecimal(amount);
    const exponent = fixedExponent - a.places;
    if (numberSafe && exponent > -16 && exponent < 16 && a.digits.length <= 15) {
      const aNumber = Number(a.digits);
      const scale = POWERS_OF_TEN[Math.abs(exponent)]!;
      const product = aNumber * xNumber;
      const numerator = exponent >= 0 ? product * scale : product;
      const denominator = exponent >= 0 ? vNumber : vNumber * scale;
      // Each step exact: every factor and product checked below 2^53 (product first: its double
      // may have been rounded, but then it is above the bound and the check fails).
      if (product <= MAX_EXACT && numerator <= MAX_EXACT && denominator <= MAX_EXACT) {
        const remainder = numerator % denominator;
        let quotient = (numerator - remainder) / denominator;
        const twice = remainder * 2;
        if (twice > denominator || (twice === denominator && quotient % 2 === 1)) quotient += 1;
        return formatScaled(String(quotient), places, a.negative);
      }
    }
    let numerator = BigInt(a.digits) * xBig;
    let denominator = vBig;
    if (exponent >= 0) numerator *= 10n ** BigInt(exponent);
    else denominator *= 10n ** BigInt(-exponent);
    let quotient = numerator / denominator;
    const twice = (numerator - quotient * denominator) * 2n;
    if (twice > denominator || (twice === denominator && (quotient & 1n) === 1n)) quotient += 1n;
    return formatScaled(quotient.toString(), places, a.negative);
  };
}

/** A × r / u half-even to `places`, exactly (see preparedRatio). */
function exactRatio(amount: string, rate: string, usdRate: string, places: number): string {
  return preparedRatio(rate, usdRate, places)(amount);
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
  return { base: 'USD', quote: currency, rate: exactRatio('1', rate, usdRate, 8), as_of: rates.as_of, source: rates.source ?? FX_SOURCE };
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
    // -0.004 rounds to zero: written "0.00", never "-0.00" (formatScaled).
    return ratio(amount);
  };
}

/** One USD amount (decimal string) in `currency`, half-even to its minor units (see usdConverter). */
export function convertUsd(amount: string, rates: FxRates, currency: string): string {
  return usdConverter(rates, currency)(amount);
}

/**
 * An amount in `currency` (EUR, or any currency of the rates) as USD: A × rate(USD) / rate(X), exactly,
 * rounded once half-even to 2 places (docs/design.md §14: skinbaron's EUR prices, stored in USD at the newest
 * rates). Throws UnsupportedCurrencyError for a currency the rates lack.
 */
export function convertToUsd(amount: string, rates: FxRates, currency: string): string {
  if (!AMOUNT.test(amount)) throw new RangeError(`not a decimal amount: ${JSON.stringify(amount)}`);
  const { rate, usdRate } = ratesFor(rates, currency);
  return exactRatio(amount, usdRate, rate, 2);
}
