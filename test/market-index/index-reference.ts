/**
 * A reference recomputation of cs2.chain-equal-weight.v1 from published numbers, written
 * independently of shared/market-index/methodology.ts: decimal strings become exact fractions,
 * rounding is half-even on fractions. Tests check the service against it.
 */
export type Fraction = { n: bigint; d: bigint };

const gcd = (a: bigint, b: bigint): bigint => {
  let x = a < 0n ? -a : a;
  let y = b < 0n ? -b : b;
  while (y !== 0n) [x, y] = [y, x % y];
  return x;
};

export function fraction(n: bigint, d: bigint = 1n): Fraction {
  if (d === 0n) throw new RangeError('zero denominator');
  const sign = d < 0n ? -1n : 1n;
  const divisor = gcd(n, d) || 1n;
  return { n: (sign * n) / divisor, d: (sign * d) / divisor };
}

export function fromDecimal(text: string): Fraction {
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match) throw new Error(`not a decimal: ${text}`);
  const digits = BigInt(`${match[1]}${match[2]}${match[3] ?? ''}`);
  return fraction(digits, 10n ** BigInt((match[3] ?? '').length));
}

export const add = (a: Fraction, b: Fraction) => fraction(a.n * b.d + b.n * a.d, a.d * b.d);
export const multiply = (a: Fraction, b: Fraction) => fraction(a.n * b.n, a.d * b.d);
export const divide = (a: Fraction, b: Fraction) => fraction(a.n * b.d, a.d * b.n);
export const subtract = (a: Fraction, b: Fraction) => add(a, fraction(-b.n, b.d));
export const compare = (a: Fraction, b: Fraction) => {
  const difference = a.n * b.d - b.n * a.d;
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
};

/** Rounds a non-negative fraction to `places` decimals, ties to even, as a fixed-point decimal string. */
export function roundHalfEven(value: Fraction, places: number): string {
  const scaled = fraction(value.n * 10n ** BigInt(places), value.d);
  let whole = scaled.n / scaled.d;
  const rest = fraction(scaled.n - whole * scaled.d, scaled.d);
  const half = compare(rest, fraction(1n, 2n));
  if (half > 0 || (half === 0 && whole % 2n !== 0n)) whole += 1n;
  const digits = whole.toString().padStart(places + 1, '0');
  return `${digits.slice(0, -places)}.${digits.slice(-places)}`;
}

/** The link factor and level the rule publishes for these constituents and previous level. */
export function referenceLink(previousLevel: string, constituents: readonly { previous: string; current: string }[]) {
  let sum = fraction(0n);
  for (const { previous, current } of constituents) sum = add(sum, fromDecimal(roundHalfEven(divide(fromDecimal(current), fromDecimal(previous)), 12)));
  const link = roundHalfEven(divide(sum, fraction(BigInt(constituents.length))), 12);
  const level = roundHalfEven(multiply(fromDecimal(previousLevel), fromDecimal(link)), 12);
  return { link, level };
}
