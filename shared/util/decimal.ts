/**
 * Decimal strings as Postgres `numeric::text` writes them ("2.30", "0.0001", "123456789.12").
 * Money is never a JS float (docs/design.md §3): comparison and the mean of two values are done on BigInt
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

/** The digits of a decimal's magnitude: the whole part without leading zeros, the fraction as written. */
function magnitudeParts(text: string, start: number): { whole: string; fraction: string } {
  const point = text.indexOf('.', start);
  let whole = point < 0 ? text.slice(start) : text.slice(start, point);
  let zeros = 0;
  while (zeros < whole.length - 1 && whole.charCodeAt(zeros) === 48) zeros += 1;
  if (zeros > 0) whole = whole.slice(zeros);
  return { whole, fraction: point < 0 ? '' : text.slice(point + 1) };
}

/** Order of two magnitudes by their digits: a longer whole part is larger, then digit by digit. */
function compareMagnitudes(a: string, aStart: number, b: string, bStart: number): number {
  const left = magnitudeParts(a, aStart);
  const right = magnitudeParts(b, bStart);
  if (left.whole.length !== right.whole.length) return left.whole.length < right.whole.length ? -1 : 1;
  if (left.whole !== right.whole) return left.whole < right.whole ? -1 : 1;
  // Fractions compare digit by digit, the shorter padded with zeros ("5" > "49", "50" = "5").
  const length = Math.max(left.fraction.length, right.fraction.length);
  for (let index = 0; index < length; index += 1) {
    const x = index < left.fraction.length ? left.fraction.charCodeAt(index) : 48;
    const y = index < right.fraction.length ? right.fraction.charCodeAt(index) : 48;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

const isZeroMagnitude = (text: string, start: number): boolean => {
  for (let index = start; index < text.length; index += 1) {
    const code = text.charCodeAt(index);
    if (code !== 48 && code !== 46) return false;
  }
  return true;
};

/**
 * Numeric order: negative, zero or positive as `a` is below, equal to or above `b` ("2.3" equals
 * "2.30"). Exact, on the digits themselves (no BigInt, no float): the consensus of a snapshot build
 * makes about a million comparisons.
 */
export function compareDecimals(a: string, b: string): number {
  if (!DECIMAL_PATTERN.test(a)) throw new Error(`not a decimal string: ${JSON.stringify(a)}`);
  if (!DECIMAL_PATTERN.test(b)) throw new Error(`not a decimal string: ${JSON.stringify(b)}`);
  const aNegative = a.charCodeAt(0) === 45 && !isZeroMagnitude(a, 1);
  const bNegative = b.charCodeAt(0) === 45 && !isZeroMagnitude(b, 1);
  if (aNegative !== bNegative) return aNegative ? -1 : 1;
  const order = compareMagnitudes(a, a.charCodeAt(0) === 45 ? 1 : 0, b, b.charCodeAt(0) === 45 ? 1 : 0);
  return aNegative ? -order : order;
}

/**
 * `decimal × factor` for a small non-negative integer factor, digit by digit (exact, no BigInt), with
 * the input's scale: "12.345" × 3 is "37.035".
 */
export function multiplyDecimal(decimal: string, factor: number): string {
  if (!DECIMAL_PATTERN.test(decimal)) throw new Error(`not a decimal string: ${JSON.stringify(decimal)}`);
  if (!Number.isInteger(factor) || factor < 0 || factor > 1_000) throw new Error(`factor must be an integer in 0..1000, not ${factor}`);
  const negative = decimal.charCodeAt(0) === 45;
  const digits = negative ? decimal.slice(1) : decimal;
  let out = '';
  let carry = 0;
  for (let index = digits.length - 1; index >= 0; index -= 1) {
    const code = digits.charCodeAt(index);
    if (code === 46) {
      out = `.${out}`;
      continue;
    }
    const product = (code - 48) * factor + carry;
    out = String(product % 10) + out;
    carry = Math.floor(product / 10);
  }
  if (carry > 0) out = String(carry) + out;
  const { whole, fraction } = magnitudeParts(out, 0);
  const result = fraction.length > 0 ? `${whole}.${fraction}` : whole;
  return negative && !isZeroMagnitude(result, 0) ? `-${result}` : result;
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
  // A stable sort keeps equal values in input order.
  const sorted = values.length === 1 ? [...values] : [...values].sort(compareDecimals);
  const middle = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[middle]! : meanOfTwoDecimals(sorted[middle - 1]!, sorted[middle]!);
  return { min: sorted[0]!, median, max: sorted[sorted.length - 1]! };
}
