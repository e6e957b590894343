import { formatSteamMoney, hundredthsOf, parseSteamMoney, type SteamWalletCurrency, steamWalletCurrencyById } from '../../../shared/fx/steam-currencies.ts';

/**
 * The simulator's priceoverview in every Steam wallet currency (docs/design.md §19): `currency=<steam id>`
 * other than 1 answers what `currency=1` answers, each money field converted at a deterministic rate
 * of that currency and written as Steam writes it there (`"1 234,56 pуб."`, `"CLP$ 1.234"`,
 * `"12.34 KD"`: shared/fx/steam-currencies.ts formatSteamMoney). Whole-unit currencies (all but RUB
 * of Steam's `bWholeUnitsOnly` ones) are priced in whole units, as Steam's market now lists them.
 *
 * Rates (units per USD) are deterministic in (seed, currency, time) and move slowly: a level (late
 * 2026), times value noise over days interpolated through the day (about 1 % a day at most, a few %
 * over weeks); SAR, AED and QAR are pegged to the dollar. Rates are integers of millionths, and the
 * conversion is integer arithmetic (half up), so a test can recompute any answer exactly.
 */

/** Units per USD (a level) and how much it moves (1 = the common amplitude; 0 = pegged). */
const LEVELS: Record<string, [level: number, volatility: number]> = {
  GBP: [0.78, 0.6],
  EUR: [0.923, 0.6],
  CHF: [0.866, 0.6],
  RUB: [81.5, 1.5],
  PLN: [3.94, 0.7],
  BRL: [5.77, 1.4],
  JPY: [149.9, 1],
  NOK: [10.8, 0.8],
  IDR: [15_810, 1],
  MYR: [4.43, 0.8],
  PHP: [57.7, 0.8],
  SGD: [1.32, 0.5],
  THB: [34.9, 0.8],
  VND: [25_950, 0.4],
  KRW: [1_393, 1],
  TRY: [34.6, 1.5],
  UAH: [41.6, 0.8],
  MXN: [19.8, 1.4],
  CAD: [1.395, 0.6],
  AUD: [1.514, 0.9],
  NZD: [1.664, 0.9],
  CNY: [7.2, 0.5],
  INR: [84.0, 0.5],
  CLP: [938, 1.2],
  PEN: [3.72, 0.7],
  COP: [4_120, 1.3],
  ZAR: [18.2, 1.3],
  HKD: [7.776, 0.05],
  TWD: [32.2, 0.6],
  SAR: [3.75, 0],
  AED: [3.6725, 0],
  ARS: [1_045, 2],
  ILS: [3.7, 0.9],
  KZT: [512, 1.2],
  KWD: [0.3074, 0.2],
  QAR: [3.64, 0],
  CRC: [508, 0.7],
  UYU: [42.9, 0.9],
};

const DAY_MS = 86_400_000;
const AMPLITUDE = 0.012;

function hash(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let index = 0; index < text.length; index += 1) {
    h ^= text.charCodeAt(index);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b) >>> 0;
  h ^= h >>> 13;
  return h >>> 0;
}

/** In [-1, 1], one value per (seed, code, day). */
function dayNoise(seed: number, code: string, day: number): number {
  return (hash(`${code}\u0000${day}`, seed) / 0xffffffff) * 2 - 1;
}

/** Millionths of `code` per USD at `now` (an integer): the simulator's Steam rate. */
export function simulatedSteamRateMillionths(seed: number, code: string, now: Date): bigint {
  const [level, volatility] = LEVELS[code] ?? [1, 0];
  const position = now.getTime() / DAY_MS;
  const day = Math.floor(position);
  const fraction = position - day;
  const noise = dayNoise(seed, code, day) * (1 - fraction) + dayNoise(seed, code, day + 1) * fraction;
  return BigInt(Math.max(1, Math.round(level * Math.exp(noise * AMPLITUDE * volatility) * 1_000_000)));
}

/** A USD amount (hundredths) in `currency`'s hundredths at `rate` millionths per USD: half up, whole units where Steam shows them. */
export function localHundredths(usdHundredths: bigint, currency: SteamWalletCurrency, rateMillionths: bigint): bigint {
  const exact = (usdHundredths * rateMillionths * 2n + 1_000_000n) / 2_000_000n;
  if (!currency.format.wholeUnits || currency.code === 'RUB') return exact > 0n ? exact : 1n;
  const whole = (exact + 50n) / 100n;
  return (whole > 0n ? whole : 1n) * 100n;
}

/** The wallet currency a priceoverview URL asks for, when it is one other than USD. */
export function otherSteamCurrency(url: URL): SteamWalletCurrency | null {
  const id = url.searchParams.get('currency');
  if (id === null || id === '1' || !/^[1-9][0-9]?$/.test(id)) return null;
  return steamWalletCurrencyById(Number(id)) ?? null;
}

/**
 * The answer for `url` (a currency other than USD): the USD answer `usdAnswer` gives for the same
 * name, its `lowest_price` and `median_price` rewritten in the currency. Fields the USD answer has in
 * no readable USD form (the simulator's partial and wrong_types modes) are passed through unchanged.
 */
export async function steamInOtherCurrency(url: URL, usdAnswer: (url: URL) => Response | Promise<Response>, seed: number, now: Date): Promise<Response> {
  const currency = otherSteamCurrency(url)!;
  const usdUrl = new URL(url);
  usdUrl.searchParams.set('currency', '1');
  const usd = await usdAnswer(usdUrl);
  const text = await usd.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return new Response(text, { status: usd.status, headers: usd.headers });
  }
  if (body !== null && typeof body === 'object' && !Array.isArray(body)) {
    const rate = simulatedSteamRateMillionths(seed, currency.code, now);
    const record = body as Record<string, unknown>;
    for (const field of ['lowest_price', 'median_price']) {
      const value = record[field];
      const amount = typeof value === 'string' ? parseSteamMoney(value, 'USD') : null;
      if (amount !== null && /^[0-9]+(\.[0-9]{1,2})?$/.test(amount))
        record[field] = formatSteamMoney(localHundredths(hundredthsOf(amount), currency, rate), currency.code);
    }
  }
  return new Response(JSON.stringify(body), { status: usd.status, headers: usd.headers });
}
