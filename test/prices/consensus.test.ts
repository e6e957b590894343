import { describe, expect, test } from 'bun:test';
import { type ConsensusInput, computeConsensus, spreadOf } from '../../shared/prices/consensus.ts';

/** docs/design.md §13's consensus on hand-made sets of source prices. */

const fresh = (source: string, price: string, bid: string | null = null): ConsensusInput => ({ source, price, bid, fresh: true });
const stale = (source: string, price: string, bid: string | null = null): ConsensusInput => ({ source, price, bid, fresh: false });

describe('consensus', () => {
  test('no fresh source: null, and nobody is an outlier', () => {
    expect(computeConsensus([])).toEqual({ consensus: null, outliers: new Set() });
    const result = computeConsensus([stale('skinport', '1.00'), stale('steam', '100.00', '90')]);
    expect(result.consensus).toBeNull();
    expect(result.outliers.size).toBe(0);
  });

  test('one fresh source is its own consensus; stale sources never count', () => {
    expect(computeConsensus([fresh('csmarket', '2.345', '2.1'), stale('steam', '0.01')]).consensus).toEqual({
      price: '2.345',
      best_ask: '2.345',
      best_bid: '2.1',
      sources: 1,
      outliers: [],
      spread: '0.1045', // (2.345 − 2.1) / 2.345 = 0.10447… → 0.1045
    });
  });

  test('two sources: no outlier rule even 100× apart; the median is their exact mean', () => {
    const result = computeConsensus([fresh('skinport', '1.00'), fresh('steam', '100.01')]);
    expect(result.consensus).toEqual({ price: '50.505', best_ask: '1.00', best_bid: null, sources: 2, outliers: [], spread: null });
    expect(result.outliers.size).toBe(0);
  });

  test('one wild source among four is flagged and left out of price, best ask and best bid', () => {
    const result = computeConsensus([
      fresh('csfloat', '10.10'),
      fresh('csmarket', '0.50', '0.45'), // 3 × 0.50 = 1.50 < m0 → outlier (a low ask and its bid are both left out)
      fresh('skinport', '10.00'),
      fresh('steam', '11.50', '9.80'),
    ]);
    // m0 = (10.00 + 10.10) / 2 = 10.05; 0.50 × 3 = 1.50 < 10.05.
    expect(result.consensus).toEqual({ price: '10.10', best_ask: '10.00', best_bid: '9.80', sources: 3, outliers: ['csmarket'], spread: '0.0200' });
    expect([...result.outliers]).toEqual(['csmarket']);
  });

  test('a high outlier: strictly above 3 × m0; exactly 3 × m0 is kept (exact decimal comparison)', () => {
    const high = computeConsensus([fresh('a', '2.00'), fresh('b', '2.00'), fresh('c', '6.01')]);
    expect(high.consensus?.outliers).toEqual(['c']);
    expect(high.consensus?.price).toBe('2.00');
    const edge = computeConsensus([fresh('a', '2.00'), fresh('b', '2.00'), fresh('c', '6.00')]);
    expect(edge.consensus?.outliers).toEqual([]);
    expect(edge.consensus?.sources).toBe(3);
    // Below: 3 × p < m0 is an outlier, 3 × p = m0 is not.
    expect(computeConsensus([fresh('a', '3.00'), fresh('b', '3.00'), fresh('c', '0.999')]).consensus?.outliers).toEqual(['c']);
    expect(computeConsensus([fresh('a', '3.00'), fresh('b', '3.00'), fresh('c', '1.000')]).consensus?.outliers).toEqual([]);
  });

  test('ties: equal prices written differently stay as written and are not outliers', () => {
    const result = computeConsensus([fresh('a', '5.0'), fresh('b', '5.00'), fresh('c', '5'), fresh('d', '5.000', '5.000')]);
    expect(result.consensus).toEqual({ price: '5.00', best_ask: '5.0', best_bid: '5.000', sources: 4, outliers: [], spread: '0.0000' });
  });

  test('ties on the bid keep the first; a bid above the best ask gives a negative spread', () => {
    const result = computeConsensus([fresh('a', '10.00', '10.50'), fresh('b', '10.40', '10.5'), fresh('c', '10.20')]);
    expect(result.consensus).toMatchObject({ best_ask: '10.00', best_bid: '10.50', spread: '-0.0500' });
  });

  test('exact decimals: thousandths and long fractions never pass through a float', () => {
    const result = computeConsensus([fresh('waxpeer', '937.999'), fresh('bitskins', '0.1'), fresh('csdeals', '0.2'), fresh('skinport', '0.3')]);
    // m0 = (0.2 + 0.3) / 2 = 0.25; 937.999 > 0.75 → outlier; 0.1 × 3 = 0.3 ≥ 0.25 → kept.
    expect(result.consensus).toEqual({ price: '0.2', best_ask: '0.1', best_bid: null, sources: 3, outliers: ['waxpeer'], spread: null });
    // 0.1 + 0.2 in floats is 0.30000000000000004; here the mean of "0.1" and "0.2" is exactly 0.15.
    expect(computeConsensus([fresh('a', '0.1'), fresh('b', '0.2')]).consensus?.price).toBe('0.15');
  });

  test('spread rounds half to even at the fourth place', () => {
    expect(spreadOf('1', '0.99995')).toBe('0.0000'); // 0.00005 → 0.0000 (even)
    expect(spreadOf('1', '0.99985')).toBe('0.0002'); // 0.00015 → 0.0002 (even)
    expect(spreadOf('1', '0.99975')).toBe('0.0002'); // 0.00025 → 0.0002 (even)
    expect(spreadOf('3', '2')).toBe('0.3333');
    expect(spreadOf('3', '1')).toBe('0.6667');
    expect(spreadOf('1', '1.00005')).toBe('0.0000'); // −0.00005 → −0 → written 0.0000
  });
});
