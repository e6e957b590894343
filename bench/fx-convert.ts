/**
 * Per-amount cost of the exact USD → X conversion (docs/design.md §14): shared/fx/convert.ts (integer
 * arithmetic) against the decimal.js form it replaced (shared/fx/convert-decimal.ts), over ~100 000
 * distinct amounts shaped like a keyless list's (2 places, a few 3, 0.01 … 50 000 skewed low), for
 * CHF (2 places, ECB rates), JPY (0 places) and a Steam-implied 8-place rate. In process, no
 * database: `bun bench/fx-convert.ts`. Each figure is the best of 5 passes (ns per amount).
 */
import { usdConverter } from '../shared/fx/convert.ts';
import { decimalJsConverter, decimalJsRatio } from '../shared/fx/convert-decimal.ts';

const COUNT = 100_000;
let seed = 29;
const random = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
const amounts = new Set<string>();
while (amounts.size < COUNT) {
  const value = Math.exp(random() * Math.log(5_000_000)); // cents, 1 … 5e6, log-uniform
  const cents = Math.max(1, Math.round(value));
  amounts.add(
    random() < 0.05
      ? (cents * 10 + Math.floor(random() * 10))
          .toString()
          .padStart(4, '0')
          .replace(/(\d{3})$/, '.$1')
      : (cents / 100).toFixed(2),
  );
}
const list = [...amounts];

const cases = [
  { label: 'CHF (0.9412 / 1.0834, 2 places)', currency: 'CHF', rate: '0.9412', usdRate: '1.0834', places: 2 },
  { label: 'JPY (162.41 / 1.0834, 0 places)', currency: 'JPY', rate: '162.41', usdRate: '1.0834', places: 0 },
  { label: 'Steam-implied (0.86524331 / 1.00000000, 2 places)', currency: 'CHF', rate: '0.86524331', usdRate: '1.00000000', places: 2 },
];

function best(run: () => void): number {
  let fastest = Infinity;
  for (let pass = 0; pass < 5; pass += 1) {
    const started = performance.now();
    run();
    fastest = Math.min(fastest, performance.now() - started);
  }
  return (fastest * 1e6) / list.length;
}

console.log(`${list.length} distinct amounts, ns per amount (best of 5 passes)`);
for (const { label, currency, rate, usdRate, places } of cases) {
  const convert = usdConverter(
    {
      as_of: '2026-11-24',
      rates: new Map([
        ['USD', usdRate],
        [currency, rate],
      ]),
      fetched_at: new Date(0),
    },
    currency,
  );
  for (const usd of list) if (convert(usd) !== decimalJsRatio(usd, rate, usdRate, places)) throw new Error(`mismatch at ${usd}`);
  const reference = decimalJsConverter(rate, usdRate, places);
  let sink = 0;
  const before = best(() => {
    for (const usd of list) sink += reference(usd).length;
  });
  const after = best(() => {
    for (const usd of list) sink += convert(usd).length;
  });
  console.log(`${label}: decimal.js ${before.toFixed(0)} ns, integer ${after.toFixed(0)} ns, ${(before / after).toFixed(1)}× (${sink > 0 ? 'checked' : ''})`);
}
