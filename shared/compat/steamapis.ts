import type { SalesWindowName } from '../sources/types.ts';
import { FormatDocuments, ItemTexts, JoinedBytes, olderOf } from './item-texts.ts';
import { jsonNumberOrNull } from './json-number.ts';
import type { BuiltCompatDocument, CompatBuilder, CompatDataset, CompatHandler, CompatItem, CompatSalesWindow } from './types.ts';

/**
 * SteamApis' `GET /market/items/730` (docs/design.md §20; docs/compat/steamapis.md), from the steam source's
 * data. SteamApis' documented body (its docs' response example; key order as there):
 *
 *   {"appID": 730, "data": [{"updated_at": 1611472110000, "prices": {"first_seen": 1378162800000,
 *     "unstable_reason": "LOW_SALES_MONTH", "unstable": true,
 *     "sold": {"avg_daily_volume": 1, "last_90d": 131, "last_30d": 38, "last_7d": 11, "last_24h": 2},
 *     "safe_ts": {"last_90d": 91.56, "last_30d": 99.75, "last_7d": 105.37, "last_24h": 106.12},
 *     "safe": 91.56, "median": 90.186, "mean": 91.49, "max": 120.42, "avg": 91.56, "min": 62.01, "latest": 116.66},
 *     "image": "…", "border_color": "…", "market_hash_name": "…", "market_name": "…", "nameID": "…"}]}
 *
 * and with `format=compact` `{"<name>": <safe>}` (`compact_value` picks another of latest, min, avg,
 * max, mean, safe, safe_ts.last_24h … safe_ts.last_90d, unstable, unstable_reason). `first_seen` and
 * `updated_at` are unix milliseconds. SteamApis writes 0 for prices it has no sales for; we write null
 * (never 0, docs/design.md §20), and leave out image, border_color, market_name and nameID, which we do not hold.
 *
 * The stored document keeps, per item, each value's JSON text (exact numbers from the decimal
 * strings); the handler writes the full body or a compact map from them, once per snapshot and form.
 */

/** The values of one item, in TOKENS order: each JSON text (`12.5`, `null`, `true`, `"NO_SALES_OVERALL"`). */
const TOKENS = [
  'first_seen',
  'unstable_reason',
  'unstable',
  'sold.avg_daily_volume',
  'sold.last_90d',
  'sold.last_30d',
  'sold.last_7d',
  'sold.last_24h',
  'safe_ts.last_90d',
  'safe_ts.last_30d',
  'safe_ts.last_7d',
  'safe_ts.last_24h',
  'safe',
  'median',
  'mean',
  'max',
  'avg',
  'min',
  'latest',
] as const;
type TokenName = (typeof TOKENS)[number];
const TOKEN_INDEX = new Map<string, number>(TOKENS.map((name, index) => [name, index]));

/** SteamApis' compact_value values (its docs); anything else is ignored and `safe` is written. */
const COMPACT_VALUES = new Set<string>([
  'latest',
  'min',
  'avg',
  'max',
  'mean',
  'safe',
  'safe_ts.last_24h',
  'safe_ts.last_7d',
  'safe_ts.last_30d',
  'safe_ts.last_90d',
  'unstable',
  'unstable_reason',
]);

/** One item: market_hash_name, updated_at (unix ms), then the TOKENS' JSON texts. */
type SteamApisRow = [name: string, updatedAtMs: number, ...tokens: string[]];
export type SteamApisDocument = { app_id: 730; items: SteamApisRow[] };

const WINDOWS: readonly [SalesWindowName, string, number][] = [
  ['90d', 'last_90d', 90],
  ['30d', 'last_30d', 30],
  ['7d', 'last_7d', 7],
  ['24h', 'last_24h', 1],
];

/** Sales a day over the widest steam window that has any, rounded half-up to a whole number (SteamApis writes an integer). */
function averageDailyVolume(sales: Partial<Record<SalesWindowName, CompatSalesWindow>>): string {
  for (const [window, , days] of WINDOWS) {
    const volume = sales[window]?.volume;
    if (volume !== undefined && volume !== null) return String(Math.floor((2 * volume + days) / (2 * days)));
  }
  return 'null';
}

/** An item's tokens, or null when we hold nothing SteamApis would say about it (no steam data and no consensus). */
function tokensOf(item: CompatItem): Record<TokenName, string> | null {
  const base = item.versions.default;
  if (!base) return null;
  const sales = base.sales.steam ?? {};
  const hasSteam = Object.keys(sales).length > 0 || base.sources.steam !== undefined;
  if (!hasSteam && base.consensus === null) return null;
  // The widest steam window that sold something: its statistics stand for SteamApis' overall ones.
  const widest = WINDOWS.map(([window]) => sales[window]).find((window) => window !== undefined && window.volume > 0 && window.median !== null);
  // safe: Steam's own sale median when Steam sold the item; otherwise our cross-market consensus, flagged unstable.
  const safe = widest?.median ?? base.consensus;
  const stable = widest !== undefined;
  const tokens = {} as Record<TokenName, string>;
  tokens.first_seen = item.first_seen_ms === null ? 'null' : String(Math.trunc(item.first_seen_ms));
  tokens.unstable_reason = stable ? 'false' : '"NO_SALES_OVERALL"';
  tokens.unstable = stable ? 'false' : 'true';
  tokens['sold.avg_daily_volume'] = averageDailyVolume(sales);
  for (const [window, key] of WINDOWS) {
    const entry = sales[window];
    tokens[`sold.${key}` as TokenName] = entry === undefined ? 'null' : String(entry.volume);
    tokens[`safe_ts.${key}` as TokenName] = jsonNumberOrNull(entry?.median);
  }
  tokens.safe = jsonNumberOrNull(safe);
  tokens.median = jsonNumberOrNull(widest?.median);
  tokens.mean = jsonNumberOrNull(widest?.mean);
  tokens.max = jsonNumberOrNull(widest?.max);
  // SteamApis' avg and mean are both the average sale price; ours is the window's mean for both.
  tokens.avg = jsonNumberOrNull(widest?.mean);
  tokens.min = jsonNumberOrNull(widest?.min);
  // The last sale's price: we record sales windows, not single sales.
  tokens.latest = 'null';
  return tokens;
}

/** Whether a steam window sold something (then the row's statistics are Steam's, not the consensus). */
function steamSold(sales: Partial<Record<SalesWindowName, CompatSalesWindow>>): boolean {
  return WINDOWS.some(([window]) => {
    const entry = sales[window];
    return entry !== undefined && entry.volume > 0 && entry.median !== null;
  });
}

/** Written as JSON text, item by item (ItemTexts keeps an unchanged item's text between builds). */
export function steamApisItemsBuilder(): CompatBuilder {
  /**
   * What a row reads while the steam source prices the item: its first_seen, the default version's steam
   * price and windows, and its consensus only where no steam window sold (the row's `safe`). Without a
   * steam price the row reads every fresh source (and the build time): kept only with the item's object.
   */
  const texts = new ItemTexts<Buffer>({
    same: (before, now) => {
      const a = before.versions.default;
      const b = now.versions.default;
      if (!a || !b || b.sources.steam === undefined) return false;
      return (
        before.first_seen_ms === now.first_seen_ms &&
        a.sources.steam === b.sources.steam &&
        a.sales.steam === b.sales.steam &&
        (a.consensus === b.consensus || steamSold(b.sales.steam ?? {}))
      );
    },
  });
  const documents = new FormatDocuments();
  return (dataset: CompatDataset): BuiltCompatDocument => {
    const parts = new JoinedBytes();
    let oldest: number | null = null;
    for (const item of dataset.items) {
      const written = texts.of(item, String(dataset.built_at_ms), () => {
        const tokens = tokensOf(item);
        if (tokens === null) return { text: null, oldest: null, usedStamp: false };
        const base = item.versions.default!;
        const steam = base.sources.steam;
        // Unix milliseconds, whole (Postgres' times carry microseconds).
        const row: SteamApisRow = [item.market_hash_name, Math.trunc(steam?.source_time_ms ?? dataset.built_at_ms), ...TOKENS.map((name) => tokens[name])];
        // The steam source's time, or (a consensus safe price) the fresh sources' behind it.
        const used = steam ? [steam] : Object.values(base.sources).filter((price) => price.fresh);
        let itemOldest: number | null = null;
        for (const price of used) itemOldest = olderOf(itemOldest, price.source_time_ms);
        return { text: Buffer.from(JSON.stringify(row)), oldest: itemOldest, usedStamp: !steam };
      });
      if (written.text === null) continue;
      parts.push(written.text);
      oldest = olderOf(oldest, written.oldest);
    }
    // The text of SteamApisDocument.
    return documents.document(parts, '{"app_id":730,"items":[', ']}', oldest);
  };
}

function isSteamApisDocument(value: unknown): value is SteamApisDocument {
  const candidate = value as SteamApisDocument | null;
  return typeof candidate === 'object' && candidate !== null && candidate.app_id === 730 && Array.isArray(candidate.items);
}

function fullJson(document: SteamApisDocument): string {
  const token = (row: SteamApisRow, name: TokenName) => row[2 + TOKEN_INDEX.get(name)!];
  const parts: string[] = [];
  for (const row of document.items) {
    const sold = `{"avg_daily_volume":${token(row, 'sold.avg_daily_volume')},"last_90d":${token(row, 'sold.last_90d')},"last_30d":${token(row, 'sold.last_30d')},"last_7d":${token(row, 'sold.last_7d')},"last_24h":${token(row, 'sold.last_24h')}}`;
    const safeTs = `{"last_90d":${token(row, 'safe_ts.last_90d')},"last_30d":${token(row, 'safe_ts.last_30d')},"last_7d":${token(row, 'safe_ts.last_7d')},"last_24h":${token(row, 'safe_ts.last_24h')}}`;
    const prices =
      `{"first_seen":${token(row, 'first_seen')},"unstable_reason":${token(row, 'unstable_reason')},"unstable":${token(row, 'unstable')},` +
      `"sold":${sold},"safe_ts":${safeTs},"safe":${token(row, 'safe')},"median":${token(row, 'median')},"mean":${token(row, 'mean')},` +
      `"max":${token(row, 'max')},"avg":${token(row, 'avg')},"min":${token(row, 'min')},"latest":${token(row, 'latest')}}`;
    parts.push(`{"updated_at":${row[1]},"prices":${prices},"market_hash_name":${JSON.stringify(row[0])}}`);
  }
  return `{"appID":730,"data":[${parts.join(',')}]}`;
}

function compactJson(document: SteamApisDocument, value: string): string {
  const index = 2 + TOKEN_INDEX.get(value)!;
  const parts: string[] = [];
  for (const row of document.items) parts.push(`${JSON.stringify(row[0])}:${row[index]}`);
  return `{${parts.join(',')}}`;
}

/**
 * `GET /compat/steamapis/market/items/:app_id[?format=compact[&compact_value=…]]`. Only app 730 is
 * served (SteamApis documents no error body: ours, 400). `format` other than `compact` and unknown
 * `compact_value`s are ignored, as unknown parameters are.
 */
export const steamapisItems: CompatHandler = (document, request) => {
  if (!isSteamApisDocument(document)) throw new Error('steamapis-items: the stored document is not of this format');
  const appId = request.params.app_id;
  if (appId !== '730') return { status: 400, ours: { message: 'Only app 730 (Counter-Strike 2) is served.', field: 'app_id' } };
  if (request.query.get('format') === 'compact') {
    const asked = request.query.get('compact_value') ?? 'safe';
    const value = COMPACT_VALUES.has(asked) ? asked : 'safe';
    return { status: 200, body: written(document, `compact:${value}`, () => compactJson(document, value)), memoKey: `compact:${value}` };
  }
  return { status: 200, body: written(document, 'full', () => fullJson(document)), memoKey: 'full' };
};

/**
 * Each answer's text, written once per stored document (the parsed document is shared by every request
 * of its snapshot, and the route asks the handler before it looks up the bytes it keeps per memoKey).
 */
const writtenAnswers = new WeakMap<SteamApisDocument, Map<string, string>>();

function written(document: SteamApisDocument, key: string, write: () => string): string {
  let answers = writtenAnswers.get(document);
  if (!answers) writtenAnswers.set(document, (answers = new Map()));
  let text = answers.get(key);
  if (text === undefined) answers.set(key, (text = write()));
  return text;
}
