import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { decimalJsRatio } from '../../shared/fx/convert-decimal.ts';
import { convertToUsd, convertUsd, type FxRates, quoteFor, usdConverter } from '../../shared/fx/index.ts';

/**
 * The integer-arithmetic converter (shared/fx/convert.ts) against the decimal.js one it replaced
 * (shared/fx/convert-decimal.ts): the same string for every input (docs/design.md §14: A × rate(X) /
 * rate(USD), exact, half-even once to X's minor units). Pure: no database.
 */

const ratesOf = (rate: string, usdRate: string, currency: string): FxRates => ({
  as_of: '2026-11-24',
  rates: new Map([
    ['EUR', '1'],
    ['USD', usdRate],
    [currency, rate],
  ]),
  fetched_at: new Date(0),
});

/** A decimal string of an integer significand and a number of places (`12345`, 2 → `"123.45"`). */
const decimalText = (significand: bigint, places: number): string => {
  const digits = significand.toString().padStart(places + 1, '0');
  return places === 0 ? digits : `${digits.slice(0, digits.length - places)}.${digits.slice(digits.length - places)}`;
};

// Amounts 0.01 … 1e7 with 0–4 decimal places (stored prices have 2, a few sources 3), sometimes with trailing zeros.
const amount = fc.tuple(fc.integer({ min: 0, max: 4 }), fc.bigInt({ min: 1n, max: 10n ** 11n })).map(([places, significand]) => {
  const limited = significand % (10n ** 7n * 10n ** BigInt(places)) || 1n;
  const floor = 10n ** BigInt(Math.max(0, places - 2)); // at least 0.01
  return decimalText(limited < floor ? floor : limited, places);
});
// ECB rates: 4–5 significant digits, 0–4 places ("0.9374", "156.23", "1.0834", "0.84290", "1523.06", "2").
const ecbRate = fc
  .tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 1, max: 99_999 }))
  .map(([places, significand]) => decimalText(BigInt(significand), places));
// Steam-implied rates: 8 places ("0.86524331", "149.82104417").
const steamRate = fc.bigInt({ min: 1n, max: 10n ** 12n }).map((significand) => decimalText(significand, 8));
const rate = fc.oneof(ecbRate, steamRate);
// USD rates are positive and realistic (ECB's is 1.0834-like, but any positive rate must work).
const usdRate = fc.oneof(ecbRate, steamRate, fc.constantFrom('1.0834', '1', '2', '1.08340000'));
// Currencies with 2 (CHF), 0 (JPY) and 3 (KWD) minor units.
const currency = fc.constantFrom(['CHF', 2], ['JPY', 0], ['KWD', 3], ['USD2', 2]) as fc.Arbitrary<[string, number]>;

describe('integer conversion = decimal.js conversion', () => {
  test('random amounts, rates and minor units', () => {
    fc.assert(
      fc.property(amount, rate, usdRate, currency, fc.boolean(), (usd, quote, usdQuote, [code, places], negative) => {
        const signed = negative ? `-${usd}` : usd;
        const expected = decimalJsRatio(signed, quote, usdQuote, places);
        expect(convertUsd(signed, ratesOf(quote, usdQuote, code), code)).toBe(expected);
        // The other direction (skinbaron's EUR → USD, 2 places) and the informative quote.
        expect(convertToUsd(usd, ratesOf(quote, usdQuote, code), code)).toBe(decimalJsRatio(usd, usdQuote, quote, 2));
        expect(quoteFor(ratesOf(quote, usdQuote, code), code).rate).toBe(decimalJsRatio('1', quote, usdQuote, 8));
      }),
      { numRuns: 20_000 },
    );
  });

  test('one converter for many amounts (a list) gives each amount its own exact result', () => {
    fc.assert(
      fc.property(rate, usdRate, currency, fc.array(amount, { minLength: 1, maxLength: 50 }), (quote, usdQuote, [code, places], amounts) => {
        const convert = usdConverter(ratesOf(quote, usdQuote, code), code);
        for (const usd of amounts) expect(convert(usd)).toBe(decimalJsRatio(usd, quote, usdQuote, places));
      }),
      { numRuns: 2_000 },
    );
  });

  test('exact halves round to even; tiny amounts round to 0; no -0', () => {
    // 1 USD = 0.5 GBP-like (rate 1 / usd 2): x.xx5 halves at 2 places.
    const half = ratesOf('1', '2', 'CHF');
    const cases: [string, string][] = [
      ['0.01', '0.00'], // 0.005 → 0.00 (even)
      ['0.03', '0.02'], // 0.015 → 0.02 (even)
      ['0.05', '0.02'], // 0.025 → 0.02
      ['0.07', '0.04'], // 0.035 → 0.04
      ['2.41', '1.20'], // 1.205 → 1.20
      ['2.43', '1.22'], // 1.215 → 1.22
      ['0.009', '0.00'], // 0.0045 → 0.00
      ['0.0001', '0.00'],
      ['-0.01', '0.00'], // -0.005 → -0.00, written 0.00
      ['-0.03', '-0.02'],
      ['0', '0.00'],
      ['0.000', '0.00'],
    ];
    for (const [usd, expected] of cases) {
      expect(convertUsd(usd, half, 'CHF')).toBe(expected);
      expect(decimalJsRatio(usd, '1', '2', 2)).toBe(expected);
    }
    // 0 places: 1 USD = 100 JPY-like / 2 → halves at integers: 0.01 → 0.5 → 0; 0.03 → 1.5 → 2; 0.05 → 2.5 → 2.
    const yen = ratesOf('100', '2', 'JPY');
    for (const [usd, expected] of [
      ['0.01', '0'],
      ['0.03', '2'],
      ['0.05', '2'],
      ['0.07', '4'],
      ['0.001', '0'],
      ['-0.01', '0'],
    ]) {
      expect(convertUsd(usd!, yen, 'JPY')).toBe(expected!);
      expect(decimalJsRatio(usd!, '100', '2', 0)).toBe(expected!);
    }
    // 3 places: 0.0005-style halves.
    const dinar = ratesOf('1', '2', 'KWD');
    for (const [usd, expected] of [
      ['0.001', '0.000'],
      ['0.003', '0.002'],
      ['0.0005', '0.000'],
      ['1.235', '0.618'],
    ]) {
      expect(convertUsd(usd!, dinar, 'KWD')).toBe(expected!);
      expect(decimalJsRatio(usd!, '1', '2', 3)).toBe(expected!);
    }
  });

  test('rates that make exact halves common (usd rate 2, 4, 8, 0.5) agree on every amount', () => {
    fc.assert(
      fc.property(
        amount,
        fc.constantFrom(['1', '2'], ['1', '4'], ['3', '8'], ['1', '0.5'], ['100', '8']),
        currency,
        (usd, [quote, usdQuote], [code, places]) => {
          expect(convertUsd(usd, ratesOf(quote!, usdQuote!, code), code)).toBe(decimalJsRatio(usd, quote!, usdQuote!, places));
        },
      ),
      { numRuns: 5_000 },
    );
  });

  test('huge amounts and rates take the BigInt path and still agree', () => {
    const rates = ratesOf('149.82104417', '1.08340000', 'CHF');
    for (const usd of ['9999999999999999.9999', '12345678901234567890.12', '0.0000000001', '90071992547409.93']) {
      expect(convertUsd(usd, rates, 'CHF')).toBe(decimalJsRatio(usd, '149.82104417', '1.08340000', 2));
    }
  });

  test('rates in exponent form keep the decimal.js path', () => {
    const rates = ratesOf('1.5e2', '1.0834', 'JPY');
    expect(convertUsd('12.34', rates, 'JPY')).toBe(decimalJsRatio('12.34', '1.5e2', '1.0834', 0));
  });
});
