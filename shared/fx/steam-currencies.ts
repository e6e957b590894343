/**
 * Steam's wallet currencies (docs/design.md §19): each with its `currency=<id>` (Steam's ECurrencyCode) and the
 * way Steam writes an amount in it. The formats are Steam's own currency table (`g_rgCurrencyData` of
 * its web pages: symbol, whether it comes first, the decimal and thousands symbols, the space between
 * symbol and number, whether amounts are shown in whole units), one row per currency:
 *
 *   "RUB":{"strCode":"RUB","eCurrencyCode":5,"strSymbol":"pуб.","bSymbolIsPrefix":false,"bWholeUnitsOnly":true,
 *          "strDecimalSymbol":",","strThousandsSeparator":"","strSymbolAndNumberSeparator":" "}
 *
 * and the amounts it answers, as priceoverview writes them: `"176,89 pуб."`, `"17,05₴"`, `"1,66€"`,
 * `"1,--€"` (EUR writes a whole amount with `--`), `"CDN$ 3.10"`, `"$1,234.56"`.
 *
 * Steam's formatter writes cents: every amount has exactly two decimals, except that the whole-unit
 * currencies drop `.00` (RUB never does). Parsing is exact string work: a currency's decimal symbol is
 * fixed, so `1.234` is 1234 pesos (CLP) and `1,234` is 1234 dollars (TWD); anything that is not exactly
 * that currency's form (wrong symbol, wrong side, separators out of place, three decimals) is null:
 * counted and skipped by the caller, never guessed.
 */

export type SteamMoneyFormat = {
  symbol: string;
  /** Other spellings of the symbol seen in Steam's answers (RUB's all-Cyrillic `руб.`). */
  otherSymbols?: readonly string[];
  prefix: boolean;
  /** strSymbolAndNumberSeparator: `''` or `' '`. */
  separator: '' | ' ';
  decimal: '.' | ',';
  /** strThousandsSeparator (`''`: none). */
  thousands: '' | ',' | '.' | ' ';
  /** bWholeUnitsOnly: `.00` is left out (RUB excepted, as Steam's own formatter does). */
  wholeUnits: boolean;
};

export type SteamWalletCurrency = { code: string; steamId: number; format: SteamMoneyFormat };

const row = (
  code: string,
  steamId: number,
  symbol: string,
  prefix: boolean,
  wholeUnits: boolean,
  decimal: SteamMoneyFormat['decimal'],
  thousands: SteamMoneyFormat['thousands'],
  separator: SteamMoneyFormat['separator'],
  otherSymbols?: readonly string[],
): SteamWalletCurrency => ({ code, steamId, format: { symbol, prefix, wholeUnits, decimal, thousands, separator, ...(otherSymbols ? { otherSymbols } : {}) } });

/** Every Steam wallet currency (ECurrencyCode 1–41; 33 and 36 are not wallet currencies any more), in id order. */
export const STEAM_WALLET_CURRENCIES: readonly SteamWalletCurrency[] = [
  row('USD', 1, '$', true, false, '.', ',', ''),
  row('GBP', 2, '£', true, false, '.', ',', ''),
  row('EUR', 3, '€', false, false, ',', ' ', ''),
  row('CHF', 4, 'CHF', true, false, '.', ' ', ' '),
  row('RUB', 5, 'pуб.', false, true, ',', '', ' ', ['руб.']),
  row('PLN', 6, 'zł', false, false, ',', ' ', ''),
  row('BRL', 7, 'R$', true, false, ',', '.', ' '),
  row('JPY', 8, '¥', true, true, '.', ',', ' '),
  row('NOK', 9, 'kr', false, false, ',', '.', ' '),
  row('IDR', 10, 'Rp', true, true, '.', ' ', ' '),
  row('MYR', 11, 'RM', true, false, '.', ',', ''),
  row('PHP', 12, 'P', true, false, '.', ',', ''),
  row('SGD', 13, 'S$', true, false, '.', ',', ''),
  row('THB', 14, '฿', true, false, '.', ',', ''),
  row('VND', 15, '₫', false, true, ',', '.', ''),
  row('KRW', 16, '₩', true, true, '.', ',', ' '),
  row('TRY', 17, 'TL', false, false, ',', '.', ' '),
  row('UAH', 18, '₴', false, true, ',', ' ', ''),
  row('MXN', 19, 'Mex$', true, false, '.', ',', ' '),
  row('CAD', 20, 'CDN$', true, false, '.', ',', ' '),
  row('AUD', 21, 'A$', true, false, '.', ',', ' '),
  row('NZD', 22, 'NZ$', true, false, '.', ',', ' '),
  row('CNY', 23, '¥', true, false, '.', ',', ' '),
  row('INR', 24, '₹', true, true, '.', ',', ' '),
  row('CLP', 25, 'CLP$', true, true, ',', '.', ' '),
  row('PEN', 26, 'S/.', true, false, '.', ',', ''),
  row('COP', 27, 'COL$', true, true, ',', '.', ' '),
  row('ZAR', 28, 'R', true, false, '.', ' ', ' '),
  row('HKD', 29, 'HK$', true, false, '.', ',', ' '),
  row('TWD', 30, 'NT$', true, true, '.', ',', ' '),
  row('SAR', 31, 'SR', false, false, '.', ',', ' '),
  row('AED', 32, 'AED', false, false, '.', ',', ' '),
  row('ARS', 34, 'ARS$', true, false, ',', '.', ' '),
  row('ILS', 35, '₪', true, false, '.', ',', ''),
  row('KZT', 37, '₸', false, true, ',', ' ', ''),
  row('KWD', 38, 'KD', false, false, '.', ',', ' '),
  row('QAR', 39, 'QR', false, false, '.', ',', ' '),
  row('CRC', 40, '₡', true, true, ',', '.', ''),
  row('UYU', 41, '$U', true, true, ',', '.', ''),
];

const BY_CODE = new Map(STEAM_WALLET_CURRENCIES.map((currency) => [currency.code, currency]));
const BY_ID = new Map(STEAM_WALLET_CURRENCIES.map((currency) => [currency.steamId, currency]));

export function steamWalletCurrency(code: string): SteamWalletCurrency | undefined {
  return BY_CODE.get(code);
}

export function steamWalletCurrencyById(steamId: number): SteamWalletCurrency | undefined {
  return BY_ID.get(steamId);
}

/**
 * The Steam wallet currencies the ECB's daily file does not publish (its ~30 currencies and EUR cover
 * the others): these get rates implied by Steam's own prices (docs/design.md §19). Should the ECB ever publish
 * one of them, its ECB rate is the one used (shared/prices/currency.ts).
 */
export const STEAM_IMPLIED_CURRENCIES: readonly string[] = [
  'RUB',
  'VND',
  'UAH',
  'CLP',
  'PEN',
  'COP',
  'TWD',
  'SAR',
  'AED',
  'ARS',
  'KZT',
  'KWD',
  'QAR',
  'CRC',
  'UYU',
];

// Whitespace Steam (or an HTML-escaped older answer) may put around or inside an amount.
const SPACES = /[\u00a0\u202f]/g;

/** `&#8364;` and `&#x20AC;` → `€` (older priceoverview answers escaped the euro sign so). */
function decodeNumericEntities(text: string): string {
  return text.replace(/&#(?:x([0-9a-fA-F]{1,6})|([0-9]{1,7}));/g, (entity, hex: string | undefined, decimal: string | undefined) => {
    const codePoint = hex !== undefined ? Number.parseInt(hex, 16) : Number(decimal);
    return codePoint > 0 && codePoint <= 0x10ffff ? String.fromCodePoint(codePoint) : entity;
  });
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

function numberPattern(format: SteamMoneyFormat, code: string): string {
  const decimal = escapeRegExp(format.decimal);
  // Grouped thousands must be groups of exactly three; an ungrouped integer is accepted too (Steam
  // leaves small amounts ungrouped). RUB's table says no separator, yet a space is seen: both are read.
  const separators = format.thousands === '' ? (code === 'RUB' ? [' '] : []) : [format.thousands];
  const grouped = separators.map((separator) => `[1-9][0-9]{0,2}(?:${escapeRegExp(separator)}[0-9]{3})+`);
  const integer = `(${[...grouped, '[0-9]+'].join('|')})`;
  const fraction = code === 'EUR' ? `(?:${decimal}([0-9]{2}|--))?` : `(?:${decimal}([0-9]{2}))?`;
  return `${integer}${fraction}`;
}

const patterns = new Map<string, RegExp>();

function patternFor(currency: SteamWalletCurrency): RegExp {
  let pattern = patterns.get(currency.code);
  if (!pattern) {
    const { format, code } = currency;
    const symbols = `(?:${[format.symbol, ...(format.otherSymbols ?? [])].map(escapeRegExp).join('|')})`;
    const number = numberPattern(format, code);
    // The space between symbol and number is cosmetic: one is accepted whatever the table says.
    const body = format.prefix ? `${symbols} ?${number}` : `${number} ?${symbols}`;
    // A USD answer for a wallet outside the US carries ` USD` after the amount.
    pattern = new RegExp(`^${body}${code === 'USD' ? '(?: USD)?' : ''}$`);
    patterns.set(code, pattern);
  }
  return pattern;
}

/**
 * An amount as Steam writes it in `code` (a wallet currency) → a plain decimal string ("1 234,56₸" →
 * "1234.56", "CLP$ 1.234" → "1234", "1,--€" → "1.00"). Null for anything else, zero included.
 */
export function parseSteamMoney(text: string, code: string): string | null {
  const currency = BY_CODE.get(code);
  if (!currency || typeof text !== 'string' || text.length > 64) return null;
  const normalised = decodeNumericEntities(text).replace(SPACES, ' ').trim();
  const match = patternFor(currency).exec(normalised);
  if (!match) return null;
  const [, integerText = '', fractionText] = match;
  const whole = integerText.replace(/[^0-9]/g, '').replace(/^0+(?=[0-9])/, '');
  const fraction = fractionText === '--' ? '00' : fractionText;
  const decimal = fraction === undefined ? whole : `${whole}.${fraction}`;
  return /[1-9]/.test(decimal) ? decimal : null;
}

/** A decimal string with at most two decimals → its integer hundredths ("12.5" → 1250n, "1234" → 123400n). */
export function hundredthsOf(decimal: string): bigint {
  const match = /^([0-9]+)(?:\.([0-9]{1,2}))?$/.exec(decimal);
  if (!match) throw new RangeError(`not an amount with at most two decimals: ${JSON.stringify(decimal)}`);
  return BigInt(`${match[1]}${(match[2] ?? '').padEnd(2, '0')}`);
}

/**
 * `hundredths` (an amount in cents of `code`) written as Steam writes it, by its own formatter's rules:
 * two decimals, `.00` left out for whole-unit currencies (not RUB), thousands grouped, EUR's `,--`.
 * The simulator answers with it; parseSteamMoney reads it back.
 */
export function formatSteamMoney(hundredths: bigint, code: string): string {
  const currency = BY_CODE.get(code);
  if (!currency) throw new RangeError(`not a Steam wallet currency: ${code}`);
  if (hundredths < 0n) throw new RangeError('negative amount');
  const { format } = currency;
  const digits = hundredths.toString().padStart(3, '0');
  const integer = digits.slice(0, -2);
  let fraction: string | null = digits.slice(-2);
  if (fraction === '00' && format.wholeUnits && code !== 'RUB') fraction = null;
  let grouped = '';
  for (let index = 0; index < integer.length; index += 1) {
    grouped += integer[index];
    const left = integer.length - index - 1;
    if (left > 0 && left % 3 === 0) grouped += format.thousands;
  }
  let number = fraction === null ? grouped : `${grouped}${format.decimal}${fraction}`;
  if (code === 'EUR') number = number.replace(/,00$/, ',--');
  return format.prefix ? `${format.symbol}${format.separator}${number}` : `${number}${format.separator}${format.symbol}`;
}
