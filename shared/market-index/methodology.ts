import { formatUnscaled, parseUnscaled } from '../util/decimal.ts';

/**
 * Market index methodology `cs2.chain-equal-weight.v1` (docs/design.md §9), as exact decimal arithmetic so
 * that anyone holding a calculation's published constituents and previous level gets the published
 * level to the last digit:
 *
 *   ratio_i  = p_i,t / p_i,t-1                        rounded half-even to 12 decimal places
 *   link     = (ratio_1 + … + ratio_n) / n            the exact sum of the rounded ratios, divided by n,
 *                                                     rounded half-even to 12 decimal places
 *   level_t  = level_{t-1} × link                      rounded half-even to 12 decimal places
 *   level_0  = 1000 (a segment's first successful calculation, its inception)
 *
 * Every input is a decimal string (Postgres numeric); every intermediate is a BigInt scaled by 10^12.
 * Scaling both periods' prices by one factor leaves each exact quotient, and so each ratio and the
 * link, unchanged.
 */
export const METHODOLOGY = 'cs2.chain-equal-weight.v1';
export const METHODOLOGIES = [METHODOLOGY] as const;
export const INDEX_SCALE = 12;
export const INCEPTION_LEVEL = '1000.000000000000';

const ONE = 10n ** BigInt(INDEX_SCALE);

/** numerator / denominator rounded half to even (denominator > 0, numerator ≥ 0). */
export function divideHalfEven(numerator: bigint, denominator: bigint): bigint {
  if (denominator <= 0n || numerator < 0n) throw new RangeError('divideHalfEven expects numerator ≥ 0 and denominator > 0');
  const quotient = numerator / denominator;
  const twice = (numerator % denominator) * 2n;
  if (twice > denominator || (twice === denominator && quotient % 2n === 1n)) return quotient + 1n;
  return quotient;
}

/** p_t / p_{t-1} rounded half-even to INDEX_SCALE places, as an integer scaled by 10^INDEX_SCALE. */
export function scaledRatio(previous: string, current: string): bigint {
  const before = parseUnscaled(previous);
  const after = parseUnscaled(current);
  if (before.value <= 0n || after.value <= 0n) throw new RangeError(`index prices must be positive (${previous} → ${current})`);
  // (a / 10^sa) / (b / 10^sb) × 10^S = a × 10^(sb + S) / (b × 10^sa)
  return divideHalfEven(after.value * 10n ** BigInt(before.scale + INDEX_SCALE), before.value * 10n ** BigInt(after.scale));
}

export const formatScaled = (value: bigint) => formatUnscaled(value, INDEX_SCALE);

/** A constituent's ratio as the decimal string the constituents endpoint publishes. */
export const ratioText = (previous: string, current: string) => formatScaled(scaledRatio(previous, current));

/** Mean of scaled ratios (their exact sum and count), rounded half-even: the link factor, scaled. */
export const linkFromSum = (sum: bigint, count: number): bigint => divideHalfEven(sum, BigInt(count));

/** level × link, both scaled by 10^INDEX_SCALE, rounded half-even back to that scale. */
export function chainLevel(previousLevel: string, link: bigint): string {
  const level = parseUnscaled(previousLevel);
  const scaledLevel = level.value * 10n ** BigInt(INDEX_SCALE - level.scale);
  return formatScaled(divideHalfEven(scaledLevel * link, ONE));
}

export type PricePair = { previous: string; current: string };

/** The link factor and the new level over `pairs` (each constituent's two prices); null without constituents. */
export function computeLink(previousLevel: string, pairs: readonly PricePair[]): { link: string; level: string; count: number } | null {
  if (pairs.length === 0) return null;
  let sum = 0n;
  for (const pair of pairs) sum += scaledRatio(pair.previous, pair.current);
  const link = linkFromSum(sum, pairs.length);
  return { link: formatScaled(link), level: chainLevel(previousLevel, link), count: pairs.length };
}

/** The published rule, for responses and docs. */
export const ROUNDING = {
  scale: INDEX_SCALE,
  mode: 'half-even',
  rule:
    'ratio_i = current_i / previous_i rounded half-even to 12 places; link_factor = exact sum of the ratios / constituent_count ' +
    'rounded half-even to 12 places; level = previous_level × link_factor rounded half-even to 12 places; a segment starts at 1000.',
} as const;
