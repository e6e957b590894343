import { compareDecimals } from '../util/decimal.ts';

/**
 * Upstream money text → decimal strings, by string and integer operations only (docs/design.md §3: money is
 * never a JS float). Every function answers null for anything it does not accept; callers count
 * such rows as malformed.
 */

const JSON_NUMBER = /^(0|[1-9][0-9]*)(?:\.([0-9]+))?(?:[eE]([+-]?[0-9]+))?$/;
const MAX_EXPONENT = 40;

/**
 * A non-negative JSON number, given as its source text, as a plain decimal string. Plain text is kept
 * exactly as written ("2.30" stays "2.30", "2" stays "2"); exponent forms are expanded ("1.5e2" →
 * "150"). Negative numbers and anything that is not JSON number text → null.
 */
export function decimalFromJsonNumber(text: string): string | null {
  const match = JSON_NUMBER.exec(text);
  if (!match) return null;
  const [, integer = '', fraction = '', exponentText] = match;
  if (exponentText === undefined) return text;
  const exponent = Number(exponentText);
  if (!Number.isSafeInteger(exponent) || Math.abs(exponent) > MAX_EXPONENT) return null;
  const digits = integer + fraction;
  const point = integer.length + exponent;
  let whole: string;
  let rest: string;
  if (point <= 0) {
    whole = '0';
    rest = '0'.repeat(-point) + digits;
  } else if (point >= digits.length) {
    whole = digits + '0'.repeat(point - digits.length);
    rest = '';
  } else {
    whole = digits.slice(0, point);
    rest = digits.slice(point);
  }
  whole = whole.replace(/^0+(?=[0-9])/, '');
  return rest ? `${whole}.${rest}` : whole;
}

/** Whether a plain decimal string is greater than zero. */
export function isPositiveDecimal(decimal: string): boolean {
  return /[1-9]/.test(decimal);
}

/** A strictly positive price from JSON number text (skinport), or null. */
export function priceFromJsonNumber(text: string): string | null {
  const decimal = decimalFromJsonNumber(text);
  return decimal !== null && isPositiveDecimal(decimal) ? decimal : null;
}

/** Integer minor units (US cents, as JSON number text: "1234") → "12.34"; null unless a positive integer. */
export function decimalFromCents(text: string): string | null {
  if (!/^[1-9][0-9]{0,17}$/.test(text)) return null;
  const padded = text.padStart(3, '0');
  return `${padded.slice(0, -2).replace(/^0+(?=[0-9])/, '')}.${padded.slice(-2)}`;
}

/** A decimal string with at most two decimals → integer cents ("12.5" → 1250); null otherwise. */
export function centsFromDecimal(decimal: string): number | null {
  const match = /^([0-9]+)(?:\.([0-9]{1,2}))?$/.exec(decimal);
  if (!match) return null;
  const cents = Number(`${match[1]}${(match[2] ?? '').padEnd(2, '0')}`);
  return Number.isSafeInteger(cents) ? cents : null;
}

const STEAM_MONEY = /^\$\s?((?:[0-9]{1,3}(?:,[0-9]{3})+)|[0-9]+)(?:\.([0-9]+))?(?:\s?USD)?$/;

/** Steam's USD text (currency=1): "$1,234.56" → "1234.56", "$0.03" → "0.03". Null unless positive. */
export function decimalFromSteamMoney(text: string): string | null {
  const match = STEAM_MONEY.exec(text.trim());
  if (!match) return null;
  const whole = (match[1] ?? '').replaceAll(',', '').replace(/^0+(?=[0-9])/, '');
  const decimal = match[2] === undefined ? whole : `${whole}.${match[2]}`;
  return isPositiveDecimal(decimal) ? decimal : null;
}

/** Steam's counts with thousands separators: "1,234" → 1234. Null for anything else. */
export function integerFromSteamCount(text: string): number | null {
  const trimmed = text.trim();
  if (!/^(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)$/.test(trimmed)) return null;
  const value = Number(trimmed.replaceAll(',', ''));
  return Number.isSafeInteger(value) ? value : null;
}

/** Groups an integer string by thousands: "1234567" → "1,234,567" (the simulator writes Steam's format with it). */
export function withThousands(integer: string): string {
  return integer.replace(/\B(?=([0-9]{3})+(?![0-9]))/g, ',');
}

/**
 * docs/design.md §13: an ask or bid above this many USD is absurd whatever the upstream says (the dearest CS2
 * items trade far below it), and is skipped like a price that does not parse.
 */
export const MAX_PRICE_USD = '10000000';

/**
 * The one gate every marketplace adapter passes its asks and bids through: a plain decimal string
 * that is strictly positive and at most MAX_PRICE_USD comes back unchanged; anything else → null.
 */
export function acceptablePrice(decimal: string | null): string | null {
  if (decimal === null || !/^[0-9]+(?:\.[0-9]+)?$/.test(decimal) || !isPositiveDecimal(decimal)) return null;
  return compareDecimals(decimal, MAX_PRICE_USD) <= 0 ? decimal : null;
}

/**
 * A USD price written as decimal text: a JSON number's source text or a string ("32.393", "12.34",
 * "1.5e1"), read by the JSON number grammar (exponents expanded, text otherwise kept as written).
 * Null unless acceptablePrice takes it.
 */
export function priceFromUsdText(text: string): string | null {
  return acceptablePrice(decimalFromJsonNumber(text));
}

/**
 * Integer thousandths of USD (waxpeer, bitskins; JSON number text or a digit string) → USD with
 * exactly three decimals: "937999" → "937.999", "12340" → "12.340", "5" → "0.005". The fixed scale
 * keeps the stored text stable from run to run (identical rows are skipped by their text). An
 * integer written with an exponent or a zero fraction ("9.37999e5", "12340.0") is the same integer;
 * a fractional count of thousandths, a negative or non-numeric text → null. Zero is "0.000" (callers
 * gate it with acceptablePrice).
 */
export function decimalFromThousandths(text: string): string | null {
  const plain = decimalFromJsonNumber(text);
  if (plain === null) return null;
  const [whole = '', fraction = ''] = plain.split('.');
  if (/[1-9]/.test(fraction)) return null;
  const padded = whole.padStart(4, '0');
  return `${padded.slice(0, -3).replace(/^0+(?=[0-9])/, '')}.${padded.slice(-3)}`;
}

/** Integer thousandths of USD as an accepted price (see decimalFromThousandths and acceptablePrice), or null. */
export function priceFromThousandthsText(text: string): string | null {
  return acceptablePrice(decimalFromThousandths(text));
}

/** The lower of two decimal strings, `a` on a tie (the first seen stays). */
export function lowerDecimal(a: string, b: string): string {
  return compareDecimals(b, a) < 0 ? b : a;
}

/** The higher of two decimal strings, `a` on a tie. */
export function higherDecimal(a: string, b: string): string {
  return compareDecimals(b, a) > 0 ? b : a;
}
