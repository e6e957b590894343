import Decimal from 'decimal.js';

const PLAIN_DECIMAL = /^-?(0|[1-9][0-9]*)(\.[0-9]+)?$/;

/**
 * A decimal string as JSON number text, exactly (never through a JS float): `"12.3400"` → `12.34`,
 * `"5.000"` → `5`, `"-0.0"` → `0`. Postgres' numeric text is already plain; anything else (an
 * exponent, a leading `+` or zero) is normalised by decimal.js.
 */
export function jsonNumber(decimal: string): string {
  let text = PLAIN_DECIMAL.test(decimal) ? decimal : new Decimal(decimal).toFixed();
  if (text.includes('.')) text = text.replace(/0+$/, '').replace(/\.$/, '');
  return text === '-0' ? '0' : text;
}

/** A decimal string or null as JSON text: a number, or `null`. */
export function jsonNumberOrNull(decimal: string | null | undefined): string {
  return decimal === null || decimal === undefined ? 'null' : jsonNumber(decimal);
}

/** A decimal string as a JSON string of its normalised text (`"0.0320"` → `"0.032"`), for formats that write prices as strings. */
export function jsonDecimalString(decimal: string): string {
  return `"${jsonNumber(decimal)}"`;
}
