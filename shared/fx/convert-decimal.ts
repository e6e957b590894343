import Decimal from 'decimal.js';

/**
 * The decimal.js form of the exact conversion A × r / u, half-even to `places` decimals (docs/design.md §14),
 * as shared/fx/convert.ts computed it before it moved to integer arithmetic. Kept as the reference
 * that convert.ts is compared with (the property test in test/fx/fx-convert.test.ts, bench/fx-convert.ts) and
 * for rates that are not plain decimal text (never the case for rates read from Postgres).
 */

/** Digits of a decimal string's integer significand (`"0.0350"` → 3: `350`), at least 1. */
function significantDigits(decimal: string): number {
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
  let decimal = decimalsByPrecision.get(precision);
  if (!decimal) {
    decimal = Decimal.clone({ precision, rounding: Decimal.ROUND_HALF_EVEN });
    decimalsByPrecision.set(precision, decimal);
  }
  return decimal;
}

/**
 * A × r / u rounded half-even to `places` decimals, exactly, where A, r, u are decimal strings
 * (u > 0), as a string with exactly `places` decimals ("0.00", never "-0.00").
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
export function decimalJsRatio(amount: string, rate: string, usdRate: string, places: number): string {
  return decimalJsConverter(rate, usdRate, places)(amount);
}

/**
 * decimalJsRatio with the rates and places fixed, as the list converter used it: the rates parsed
 * and their part of the precision counted once (a Decimal made from a string holds it exactly).
 */
export function decimalJsConverter(rate: string, usdRate: string, places: number): (amount: string) => string {
  const rateDecimal = new Decimal(rate);
  const usdRateDecimal = new Decimal(usdRate);
  const fixedDigits = significantDigits(rate) + decimalPlaces(usdRate) + places + 2;
  return (amount) => {
    const Exact = decimalWithPrecision(significantDigits(amount) + fixedDigits);
    const converted = new Exact(amount).times(rateDecimal).dividedBy(usdRateDecimal).toDecimalPlaces(places, Decimal.ROUND_HALF_EVEN);
    // -0.004 rounds to zero: written "0.00", never "-0.00".
    return converted.isZero() ? new Decimal(0).toFixed(places) : converted.toFixed(places);
  };
}
