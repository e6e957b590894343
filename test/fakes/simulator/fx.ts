/**
 * The exchange-rate file in the market simulator (docs/design.md §14): the ECB's daily reference rates.
 *
 *   /fx/stats/eurofxref/eurofxref-daily.xml          `gesmes:Envelope` XML
 *
 * The file for the latest working day (Monday to Friday, UTC) at or before `now`, with the real
 * file's ~30 currencies in its order, each rate written with the ECB's own number of decimals. Rates
 * are deterministic in (seed, currency, day) and drift slowly: value noise over days (about 0.3 %
 * from one day to the next, a few % over weeks); BGN is pegged (1.9558 every day) and DKK moves
 * within 0.1 %. Its modes: ok, fail (500 HTML page), stall, rate_limit (429), malformed (the file cut
 * short), partial (every third rate entry, index % 3 === 1, broken in turn: a lower-case code, a
 * non-numeric rate, a negative rate; USD, the first, is always good), wrong_types (a well-formed
 * envelope whose rates use a decimal comma, `1,0834`: none is usable). Skinbaron (skinbaron.ts)
 * converts at this file's USD rate.
 */
import { hashString, valueNoise } from './noise.ts';
import type { Handler, SimulatorMode, SimulatorState, Upstream } from './types.ts';

export const ECB_HEAD =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">\n' +
  '\t<gesmes:subject>Reference rates</gesmes:subject>\n' +
  '\t<gesmes:Sender>\n\t\t<gesmes:name>European Central Bank</gesmes:name>\n\t</gesmes:Sender>\n';

/**
 * The real file's currencies in its order: a level (units per EUR, late 2026), the decimals the ECB
 * writes it with, and how much it moves (1 = the common amplitude; BGN is pegged, DKK nearly so).
 */
const ECB_CURRENCIES: readonly [code: string, level: number, decimals: number, volatility: number][] = [
  ['USD', 1.0834, 4, 1],
  ['JPY', 162.35, 2, 1],
  ['BGN', 1.9558, 4, 0],
  ['CZK', 25.112, 3, 0.5],
  ['DKK', 7.4598, 4, 0.02],
  ['GBP', 0.84315, 5, 0.6],
  ['HUF', 405.18, 2, 1],
  ['PLN', 4.2735, 4, 0.6],
  ['RON', 4.9762, 4, 0.3],
  ['SEK', 11.4565, 4, 0.8],
  ['CHF', 0.9381, 4, 0.6],
  ['ISK', 149.9, 2, 0.8],
  ['NOK', 11.7035, 4, 0.8],
  ['TRY', 37.4818, 4, 1.5],
  ['AUD', 1.6402, 4, 1],
  ['BRL', 6.2561, 4, 1.4],
  ['CAD', 1.5121, 4, 0.9],
  ['CNY', 7.8012, 4, 0.9],
  ['HKD', 8.4237, 4, 1],
  ['IDR', 17132.45, 2, 1.1],
  ['ILS', 4.0031, 4, 1],
  ['INR', 91.0125, 4, 1],
  ['KRW', 1509.62, 2, 1.1],
  ['MXN', 21.4278, 4, 1.4],
  ['MYR', 4.8045, 4, 1],
  ['NZD', 1.8032, 4, 1],
  ['PHP', 62.523, 3, 1],
  ['SGD', 1.4311, 4, 0.7],
  ['THB', 37.821, 3, 1],
  ['ZAR', 19.7164, 4, 1.3],
];
// Scales in days and amplitudes (log-rate): ~0.3 % a day, a few % over weeks and months.
const FX_OCTAVES: [number, number][] = [
  [1, 0.003],
  [8, 0.01],
  [64, 0.03],
];
const DAY_MS = 86_400_000;

/** The ECB reference day of `now`: its UTC date, or the Friday before on a weekend (no file then). */
function ecbDay(now: Date): number {
  const day = Math.floor(now.getTime() / DAY_MS);
  const weekday = new Date(day * DAY_MS).getUTCDay();
  return weekday === 6 ? day - 1 : weekday === 0 ? day - 2 : day;
}

/** An integer of `decimals` implied places as decimal text: (10834, 4) → "1.0834". */
function impliedDecimal(units: number, decimals: number): string {
  const digits = String(units).padStart(decimals + 1, '0');
  return decimals === 0 ? digits : `${digits.slice(0, -decimals)}.${digits.slice(-decimals)}`;
}

/** A currency's rate on an ECB day: an integer of `decimals` implied places (10834, 4 → 1.0834). */
function ecbRateUnits(seed: number, day: number, code: string, level: number, volatility: number, decimals: number): number {
  const h = hashString(`fx\u0000${code}`, seed);
  let sum = 0;
  for (const [octave, [scale, amplitude]] of FX_OCTAVES.entries()) sum += valueNoise(h, octave, day, scale) * amplitude;
  return Math.max(1, Math.round(level * Math.exp(sum * volatility) * 10 ** decimals));
}

/** USD per EUR in the file served at `now` (whatever the fx mode), as integer units and their decimals: skinbaron's conversion. */
export function ecbUsdRate(seed: number, now: Date): { units: number; decimals: number } {
  const [code, level, decimals, volatility] = ECB_CURRENCIES[0]!;
  return { units: ecbRateUnits(seed, ecbDay(now), code, level, volatility, decimals), decimals };
}

/** The daily file at `now` in a mode (ok, partial, wrong_types; the others never reach here). */
function ecbDailyXml(seed: number, now: Date, mode: SimulatorMode): string {
  const day = ecbDay(now);
  const date = new Date(day * DAY_MS).toISOString().slice(0, 10);
  const lines = ECB_CURRENCIES.map(([code, level, decimals, volatility], index) => {
    let currency = code;
    let rate = impliedDecimal(ecbRateUnits(seed, day, code, level, volatility, decimals), decimals);
    if (mode === 'wrong_types') rate = rate.replace('.', ',');
    if (mode === 'partial' && index % 3 === 1) {
      const kind = Math.floor(index / 3) % 3;
      if (kind === 0) currency = code.toLowerCase();
      else if (kind === 1) rate = 'N/A';
      else rate = `-${rate}`;
    }
    return `\t\t\t<Cube currency='${currency}' rate='${rate}'/>\n`;
  });
  return `${ECB_HEAD}\t<Cube>\n\t\t<Cube time='${date}'>\n${lines.join('')}\t\t</Cube>\n\t</Cube>\n</gesmes:Envelope>\n`;
}

export const FX: Upstream = {
  source: 'fx',
  routes: { '/fx/stats/eurofxref/eurofxref-daily.xml': 'fx' },
  malformed: { fx: `${ECB_HEAD}\t<Cube>\n\t\t<Cube time='2026-11-24'>\n\t\t\t<Cube currency='USD' rate='1.08` },
  malformedContentType: 'text/xml',
  rateLimited: '<html><head><title>429 Too Many Requests</title></head><body><h1>Too Many Requests</h1></body></html>',
  create:
    (state: SimulatorState): Handler =>
    () =>
      new Response(ecbDailyXml(state.market.seed, state.market.now(), state.modes.fx), { headers: { 'content-type': 'text/xml' } }),
};
