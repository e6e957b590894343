import Decimal from 'decimal.js';
import { z } from 'zod';
import { compareDecimals, multiplyDecimal, type PriceSummary, summarizeDecimals } from '../util/decimal.ts';

/**
 * The cross-market consensus of one item and version (docs/design.md §13), from the sources' latest prices:
 *
 *   m0 = median of the fresh sources' `price` (the lowest asks);
 *   with 3 or more fresh sources, a source whose price p has p > 3 × m0 or 3 × p < m0 is an outlier;
 *   price = median of the fresh non-outlier prices, best_ask = the lowest of them, best_bid = the
 *   highest bid among the fresh non-outliers (null when none has one), sources = how many they are,
 *   spread = (best_ask − best_bid) / best_ask, half-even to 4 places (null without a bid; negative
 *   when a bid somewhere is above the best ask elsewhere).
 *
 * Null when no source is fresh. Every comparison is exact on decimal strings, and medians follow
 * summarizeDecimals (an even count takes the exact mean of the two middle prices).
 */

export const consensusSchema = z
  .object({
    price: z.string().describe('Median of the fresh, non-outlier sources’ lowest asks (decimal string)'),
    best_ask: z.string().describe('Lowest ask among them'),
    best_bid: z.string().nullable().describe('Highest buy order among them; null when none publishes one'),
    sources: z.number().int().describe('How many fresh, non-outlier sources the consensus uses'),
    outliers: z.array(z.string()).describe('Fresh sources left out: price above 3× or below ⅓ of the fresh median (with 3+ fresh sources)'),
    spread: z.string().nullable().describe('(best_ask − best_bid) / best_ask, half-even to 4 places; null without a bid'),
  })
  .nullable()
  .describe('Cross-market consensus of the fresh sources (docs/design.md §13); null when no source is fresh');

export type Consensus = NonNullable<z.infer<typeof consensusSchema>>;

export type ConsensusInput = { source: string; price: string; bid: string | null; fresh: boolean };

/** Outliers are judged only when at least this many sources are fresh. */
const MIN_SOURCES_FOR_OUTLIERS = 3;
const OUTLIER_FACTOR = 3;

const SpreadDecimal = Decimal.clone({ precision: 60, rounding: Decimal.ROUND_HALF_EVEN });

/** (ask − bid) / ask, half-even to 4 places, as a decimal string ("0.0000", never "-0.0000"). */
export function spreadOf(ask: string, bid: string): string {
  const spread = new SpreadDecimal(ask).minus(bid).dividedBy(ask).toDecimalPlaces(4, Decimal.ROUND_HALF_EVEN);
  return spread.isZero() ? '0.0000' : spread.toFixed(4);
}

/** Which of `prices` are outliers against m0, their median (docs/design.md §13's 3× rule); none with fewer than three. */
function outlierFlags(prices: readonly string[], summary: PriceSummary): boolean[] {
  if (prices.length < MIN_SOURCES_FOR_OUTLIERS) return prices.map(() => false);
  const m0 = summary.median;
  const high = multiplyDecimal(m0, OUTLIER_FACTOR);
  return prices.map((price) => compareDecimals(price, high) > 0 || compareDecimals(multiplyDecimal(price, OUTLIER_FACTOR), m0) < 0);
}

/**
 * The consensus of one item and version and the names of its outlier sources (also listed in
 * `consensus.outliers`, in input order). Inputs are the version's sources, stale ones included.
 */
export function computeConsensus(
  inputs: readonly ConsensusInput[],
  /** summarizeDecimals of every input's price, when the caller has it already (min / median / max). */
  allSummary?: PriceSummary,
): { consensus: Consensus | null; outliers: ReadonlySet<string> } {
  const fresh = inputs.filter((input) => input.fresh);
  if (fresh.length === 0) return { consensus: null, outliers: new Set() };
  const freshPrices = fresh.map((input) => input.price);
  const freshSummary = allSummary && fresh.length === inputs.length ? allSummary : summarizeDecimals(freshPrices)!;
  const flags = outlierFlags(freshPrices, freshSummary);
  const kept = fresh.filter((_, index) => !flags[index]);
  const outliers = fresh.filter((_, index) => flags[index]).map((input) => input.source);
  // Without outliers the kept prices are the fresh ones: their summary is already known.
  const summary = outliers.length === 0 ? freshSummary : summarizeDecimals(kept.map((input) => input.price))!;
  let bestBid: string | null = null;
  for (const input of kept) if (input.bid !== null && (bestBid === null || compareDecimals(input.bid, bestBid) > 0)) bestBid = input.bid;
  return {
    consensus: {
      price: summary.median,
      best_ask: summary.min,
      best_bid: bestBid,
      sources: kept.length,
      outliers,
      spread: bestBid === null ? null : spreadOf(summary.min, bestBid),
    },
    outliers: new Set(outliers),
  };
}
