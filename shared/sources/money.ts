/**
 * Upstream money text → decimal strings, by string and integer operations only (DESIGN 3: money is
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
