/**
 * Skinport's sales history in the market simulator (docs/design.md §19): `GET /skinport/v1/sales/history?
 * app_id=730&currency=USD`, a bare array with one row per (name, version) the simulator lists on
 * skinport, each `{market_hash_name, version, currency, item_page, market_page, last_24_hours,
 * last_7_days, last_30_days, last_90_days}` and each window `{min, max, avg, median, volume}`: JSON
 * numbers with two decimals, null prices when volume is 0 (as upstream writes them).
 *
 * Deterministic in (seed, name, version, hour): sales sit around the item's current skinport ask
 * (median 0.9–1.05 ×, min and max a few % either side, the mean between median and max), volumes grow
 * with the window (a 7-day volume is 3–7 × the 24 h one, and so on) and fall with the price; about a
 * third of items sold nothing in the last 24 hours and some nothing in 7 days. Modes as skinport's
 * other endpoint: `partial` breaks every third row in turn (no name; a window that is a string; a
 * negative median), `wrong_types` writes every window's numbers as strings (no window is readable).
 */

export type SalesEntry = {
  name: string;
  /** Upstream phase label, null for `default`. */
  label: string | null;
  hash: number;
};

const WINDOWS = [
  ['last_24_hours', 1],
  ['last_7_days', 5],
  ['last_30_days', 18],
  ['last_90_days', 45],
] as const;

function mix(a: number, b: number): number {
  let h = Math.imul(a ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(b + 0x7f4a7c15, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h >>> 0;
}
const unit = (h: number) => h / 2 ** 32;
const money = (cents: number) => (Math.max(1, Math.round(cents)) / 100).toFixed(2);

function windowJson(entry: SalesEntry, askCents: number, hour: number, index: number, scale: number, wrongTypes: boolean): string {
  const h = mix(entry.hash, hour * 4 + index);
  // Cheap items sell in hundreds a day, expensive ones a few a month.
  const daily = askCents < 100 ? 120 : askCents < 1_000 ? 25 : askCents < 10_000 ? 4 : askCents < 100_000 ? 0.6 : 0.1;
  const quiet = unit(mix(entry.hash, 77)) < 0.33 && index === 0;
  const volume = quiet ? 0 : Math.floor(daily * scale * (0.5 + unit(h)) + (unit(mix(h, 1)) < 0.5 ? 0 : 1));
  if (volume === 0) return `{"min":null,"max":null,"avg":null,"median":null,"volume":${wrongTypes ? '"0"' : '0'}}`;
  const median = askCents * (0.9 + 0.15 * unit(mix(h, 2)));
  const min = volume === 1 ? median : median * (0.92 + 0.06 * unit(mix(h, 3)));
  const max = volume === 1 ? median : median * (1.02 + 0.2 * unit(mix(h, 4)));
  const avg = volume === 1 ? median : (median + max) / 2 - (max - median) * 0.3;
  const number = (value: number) => (wrongTypes ? `"${money(value)}"` : money(value));
  return `{"min":${number(min)},"max":${number(max)},"avg":${number(avg)},"median":${number(median)},"volume":${wrongTypes ? `"${volume}"` : volume}}`;
}

/**
 * The body for one hour as JSON text in chunks of about `chunkRows` rows (the caller compresses them as
 * they come, so the whole text, ~15 MB for the real catalog, is never held at once): `askCents` gives
 * the entry's current skinport ask (null: not listed, no row).
 */
export function* skinportSalesChunks(
  entries: Iterable<SalesEntry>,
  askCents: (entry: SalesEntry) => number | null,
  options: { hour: number; partial: boolean; wrongTypes: boolean; slug: (text: string) => string; chunkRows?: number },
): Generator<string> {
  const chunkRows = options.chunkRows ?? 1_000;
  let rows: string[] = [];
  let index = 0;
  for (const entry of entries) {
    const ask = askCents(entry);
    if (ask === null) continue;
    const broken = options.partial && index % 3 === 1 ? Math.floor(index / 3) % 3 : -1;
    const windows = WINDOWS.map(([field, scale], windowIndex) => {
      if (broken === 1 && windowIndex === 1) return `"${field}":"n/a"`;
      if (broken === 2 && windowIndex === 1) return `"${field}":{"min":-1.00,"max":2.00,"avg":1.50,"median":-1.00,"volume":3}`;
      return `"${field}":${windowJson(entry, ask, options.hour, windowIndex, scale, options.wrongTypes)}`;
    });
    const slug = options.slug(entry.name) + (entry.label ? `-${options.slug(entry.label)}` : '');
    rows.push(
      `${index === 0 ? '[' : ','}{${broken === 0 ? '' : `"market_hash_name":${JSON.stringify(entry.name)},`}"version":${entry.label ? JSON.stringify(entry.label) : 'null'},"currency":"USD",` +
        `"item_page":${JSON.stringify(`https://skinport.com/item/${slug}`)},"market_page":${JSON.stringify(`https://skinport.com/market?item=${encodeURIComponent(entry.name)}`)},` +
        `${windows.join(',')}}`,
    );
    index += 1;
    if (rows.length >= chunkRows) {
      yield rows.join('');
      rows = [];
    }
  }
  rows.push(index === 0 ? '[]' : ']');
  yield rows.join('');
}
