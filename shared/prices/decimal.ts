/**
 * Decimal strings as Postgres `numeric::text` writes them ("2.30", "0.0001", "123456789.12").
 * Money is never a JS float (DESIGN 3): comparison and the mean of two values are done on BigInt
 * unscaled integers, and stored values are passed through as the exact strings they came in as.
 */
const DECIMAL_PATTERN = /^(-?)(\d+)(?:\.(\d+))?$/;

/** A decimal as an integer and its scale: "2.30" is { value: 230n, scale: 2 }. */
export type Unscaled = { value: bigint; scale: number };

export function parseUnscaled(text: string): Unscaled {
  const match = DECIMAL_PATTERN.exec(text);
  if (!match) throw new Error(`not a decimal string: ${JSON.stringify(text)}`);
  const fraction = match[3] ?? '';
  const magnitude = BigInt(`${match[2]}${fraction}`);
  return { value: match[1] === '-' ? -magnitude : magnitude, scale: fraction.length };
}

function rescale(decimal: Unscaled, scale: number): bigint {
  return decimal.value * 10n ** BigInt(scale - decimal.scale);
}

/** The decimal string of value × 10^-scale, with exactly `scale` fraction digits. */
export function formatUnscaled(value: bigint, scale: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(scale + 1, '0');
  const whole = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${whole}` : whole;
}

export function isDecimalString(text: string): boolean {
  return DECIMAL_PATTERN.test(text);
}

/** Numeric order: negative, zero or positive as `a` is below, equal to or above `b` ("2.3" equals "2.30"). */
export function compareDecimals(a: string, b: string): number {
  const left = parseUnscaled(a);
  const right = parseUnscaled(b);
  const scale = Math.max(left.scale, right.scale);
  const difference = rescale(left, scale) - rescale(right, scale);
  return difference < 0n ? -1 : difference > 0n ? 1 : 0;
}

/**
 * The exact mean of two decimals. Halving needs at most one digit more than the finer input, so
 * the result keeps the inputs' scale when it can ("2.30","2.50" → "2.40") and adds one digit when
 * it must ("2.30","2.41" → "2.355").
 */
export function meanOfTwoDecimals(a: string, b: string): string {
  const left = parseUnscaled(a);
  const right = parseUnscaled(b);
  const scale = Math.max(left.scale, right.scale);
  const sum = rescale(left, scale) + rescale(right, scale);
  if (sum % 2n === 0n) return formatUnscaled(sum / 2n, scale);
  return formatUnscaled(sum * 5n, scale + 1);
}

export type PriceSummary = { min: string; median: string; max: string };

/**
 * min, median and max of a non-empty list of decimal strings. min and max are input strings
 * unchanged; the median of an odd count is the middle input unchanged, of an even count the exact
 * mean of the two middle values. Equal values keep their input order, so the result is deterministic.
 */
export function summarizeDecimals(values: readonly string[]): PriceSummary | null {
  if (values.length === 0) return null;
  const sorted = values
    .map((text, index) => ({ text, index, parsed: parseUnscaled(text) }))
    .sort((a, b) => {
      const scale = Math.max(a.parsed.scale, b.parsed.scale);
      const difference = rescale(a.parsed, scale) - rescale(b.parsed, scale);
      return difference < 0n ? -1 : difference > 0n ? 1 : a.index - b.index;
    })
    .map((entry) => entry.text);
  const middle = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[middle]! : meanOfTwoDecimals(sorted[middle - 1]!, sorted[middle]!);
  return { min: sorted[0]!, median, max: sorted[sorted.length - 1]! };
}
