import { describe, expect, test } from 'bun:test';
import fc from 'fast-check';
import { chainLevel, computeLink, divideHalfEven, INCEPTION_LEVEL, scaledRatio } from '../../shared/market-index/methodology.ts';
import { add, compare, type Fraction, fraction, fromDecimal, multiply, referenceLink, subtract } from './index-reference.ts';

// Property tests of cs2.chain-equal-weight.v1's arithmetic (docs/design.md §9). The service's BigInt
// implementation is checked against an independent fraction-based reference (test/market-index/index-reference.ts).

const decimalText = (unscaled: bigint, scale: number) => {
  if (scale === 0) return unscaled.toString();
  const digits = unscaled.toString().padStart(scale + 1, '0');
  return `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
};
/** Positive prices from 0.0001 to 10^9 with 0–4 fraction digits, as upstreams send them. */
const price = fc.tuple(fc.bigInt({ min: 1n, max: 10n ** 9n }), fc.integer({ min: 0, max: 4 })).map(([value, scale]) => decimalText(value, scale));
const pairs = fc.array(fc.record({ previous: price, current: price }), { minLength: 1, maxLength: 60 });
/** Index levels as published: 12 fraction digits. */
const level = fc.bigInt({ min: 1n, max: 10n ** 18n }).map((value) => decimalText(value, 12));
/** Scale factors with up to 6 fraction digits, from 0.000001 to 10^6. */
const factor = fc.tuple(fc.bigInt({ min: 1n, max: 10n ** 12n }), fc.integer({ min: 0, max: 6 })).map(([value, scale]) => decimalText(value, scale));

/** Exact product of two decimal strings, as a decimal string (both scales add up). */
function times(a: string, b: string): string {
  const [ai, af = ''] = a.split('.');
  const [bi, bf = ''] = b.split('.');
  return decimalText(BigInt(`${ai}${af}`) * BigInt(`${bi}${bf}`), af.length + bf.length);
}

describe('cs2.chain-equal-weight.v1 arithmetic', () => {
  test('half-even division rounds ties to the even neighbour', () => {
    expect(divideHalfEven(5n, 2n)).toBe(2n);
    expect(divideHalfEven(7n, 2n)).toBe(4n);
    expect(divideHalfEven(1n, 3n)).toBe(0n);
    expect(divideHalfEven(2n, 3n)).toBe(1n);
    expect(scaledRatio('3', '1')).toBe(333_333_333_333n);
    expect(scaledRatio('2.00', '4.0')).toBe(2_000_000_000_000n);
    expect(() => scaledRatio('0', '1')).toThrow();
  });

  test('recomputing the level from the constituents and the previous level gives the published level exactly', () => {
    fc.assert(
      fc.property(level, pairs, (previousLevel, constituents) => {
        const published = computeLink(previousLevel, constituents)!;
        const reference = referenceLink(previousLevel, constituents);
        expect(published.link).toBe(reference.link);
        expect(published.level).toBe(reference.level);
        expect(published.count).toBe(constituents.length);
      }),
      { numRuns: 300 },
    );
  });

  test('scaling every price of both periods by one factor leaves the link factor unchanged', () => {
    fc.assert(
      fc.property(pairs, factor, (constituents, k) => {
        const scaled = constituents.map(({ previous, current }) => ({ previous: times(previous, k), current: times(current, k) }));
        expect(computeLink(INCEPTION_LEVEL, scaled)!.link).toBe(computeLink(INCEPTION_LEVEL, constituents)!.link);
      }),
      { numRuns: 300 },
    );
  });

  test('a chain of calculations equals the product of its links, up to the documented per-step rounding', () => {
    fc.assert(
      fc.property(fc.array(pairs, { minLength: 1, maxLength: 25 }), (periods) => {
        let published = INCEPTION_LEVEL;
        let product: Fraction = fromDecimal(INCEPTION_LEVEL);
        // Rounding each level to 12 places errs by at most 0.5e-12, carried forward by later links.
        let bound: Fraction = fraction(0n);
        const halfUlp = fraction(1n, 2n * 10n ** 12n);
        for (const constituents of periods) {
          const step = computeLink(published, constituents)!;
          const link = fromDecimal(step.link);
          // Folding the published links with the published rule gives the published level exactly.
          expect(chainLevel(published, scaledLinkOf(step.link))).toBe(step.level);
          product = multiply(product, link);
          bound = add(multiply(bound, link), halfUlp);
          published = step.level;
        }
        const difference = subtract(fromDecimal(published), product);
        const magnitude = difference.n < 0n ? fraction(-difference.n, difference.d) : difference;
        expect(compare(magnitude, bound)).toBeLessThanOrEqual(0);
      }),
      { numRuns: 150 },
    );
  });

  test('a constituent whose price did not move contributes a ratio of exactly 1', () => {
    fc.assert(
      fc.property(price, (value) => {
        expect(computeLink(INCEPTION_LEVEL, [{ previous: value, current: value }])).toEqual({ link: '1.000000000000', level: INCEPTION_LEVEL, count: 1 });
      }),
    );
  });
});

const scaledLinkOf = (link: string) => BigInt(link.replace('.', ''));
