import Decimal from 'decimal.js';
import { PHASE_LABELS as CATALOG_PHASE_LABELS, PHASE_VERSIONS, type PhaseVersion } from '../catalog/identity.ts';
import type { SalesWindowName } from '../sources/types.ts';
import { FormatDocuments, ItemTexts, JoinedBytes, olderOf } from './item-texts.ts';
import { jsonDecimalString, jsonNumber, jsonNumberOrNull } from './json-number.ts';
import type { BuiltCompatDocument, CompatAnswer, CompatBuilder, CompatDataset, CompatHandler, CompatItem, CompatVersion } from './types.ts';

/**
 * csgotrader's price files (docs/design.md §20; docs/compat/csgotrader.md), as `prices.csgotrader.app/latest/`
 * served them and as csgo-trader-extension's `utils/pricing.js` reads them:
 *
 *   prices_v6.json  {"<name>": {"steam": {"last_90d": n|null, "last_30d": …, "last_7d": …, "last_24h": …},
 *                               "bitskins": {"price": "0.07", "instant_sale_price": null} | null,
 *                               "csgotm": "0.032" | null,
 *                               "skinport": {"suggested_price": n|null, "starting_at": n|null} | null,
 *                               "csgotrader": {"price": n|null, "doppler"?: {"Phase 2": n, "Ruby": n, …}} | null,
 *                               "csfloat": {"price": …, "doppler"?: …} | null, …}}
 *   <provider>.json {"<name>": <that provider's entry>} for the names it has (no nulls)
 *   exchange_rates.json {"USD": 1, "EUR": 0.92, …} (units per USD)
 *
 * The upstream generator wrote every provider key on every name, null where that provider lacked the
 * name, and `steam` always as the four windows (null each without data); it wrote bitskins' prices as
 * bitskins' own decimal strings and csgotm's price as a string. `doppler` is an object or absent, never
 * null: the extension's getPrice indexes it by the phase name without a null check.
 *
 * The stored document keeps, per provider, each name's entry as exact JSON text (numbers written from
 * the decimal strings, never through a float), aligned with `names`; the handler joins them into the
 * file asked for, once per snapshot and file (memoKey).
 */

/** The doppler map's keys, as the extension's dopplerPhases and the upstream generator spell them (the labels every upstream writes). */
const PHASE_LABELS: Readonly<Record<PhaseVersion, string>> = CATALOG_PHASE_LABELS;

type ProviderKind = 'steam' | 'bitskins' | 'csgotm' | 'skinport' | 'consensus' | 'doppler';
type Provider = { file: string; kind: ProviderKind; source: string | null };

/** prices_v6's providers in the upstream file's order, then our other sources, each under its own name. */
const FIXED_PROVIDERS: readonly Provider[] = [
  { file: 'steam', kind: 'steam', source: 'steam' },
  { file: 'bitskins', kind: 'bitskins', source: 'bitskins' },
  { file: 'csgotm', kind: 'csgotm', source: 'csmarket' },
  { file: 'skinport', kind: 'skinport', source: 'skinport' },
  { file: 'csgotrader', kind: 'consensus', source: null },
  { file: 'csfloat', kind: 'doppler', source: 'csfloat' },
  { file: 'lisskins', kind: 'doppler', source: 'lisskins' },
  { file: 'waxpeer', kind: 'doppler', source: 'waxpeer' },
  { file: 'whitemarket', kind: 'doppler', source: 'whitemarket' },
  { file: 'csdeals', kind: 'doppler', source: 'csdeals' },
  { file: 'skinbaron', kind: 'doppler', source: 'skinbaron' },
];
const FIXED_SOURCES = new Set(FIXED_PROVIDERS.map((provider) => provider.source).filter((source) => source !== null));
const FIXED_FILES = new Set(FIXED_PROVIDERS.map((provider) => provider.file));
/** A provider file name that can be served: a plain lowercase word (a new source is served under its own name). */
const PROVIDER_NAME = /^[a-z0-9]+$/;

/** The stored document (JSON-able: every number is already JSON text inside a string). */
export type CsgotraderDocument = {
  /** prices_v6's providers, in its key order: ours always, any other source once it has an entry. */
  providers: string[];
  /** Every provider a row has a cell for, in cell order (a superset of `providers`). */
  columns: string[];
  /** One row per name of prices_v6, in byte order: the name, then per column the entry's JSON text or null. */
  rows: [name: string, ...cells: (string | null)[]][];
  /** exchange_rates.json's text. */
  exchange_rates: string;
};

const STEAM_WINDOWS: readonly [string, SalesWindowName][] = [
  ['last_90d', '90d'],
  ['last_30d', '30d'],
  ['last_7d', '7d'],
  ['last_24h', '24h'],
];
const STEAM_WITHOUT_DATA = '{"last_90d":null,"last_30d":null,"last_7d":null,"last_24h":null}';

/** Steam's windows: the median sale price over each window the steam source has (priceoverview: 24 h only), null for the others. */
function steamEntry(version: CompatVersion | undefined): string | null {
  const sales = version?.sales.steam;
  if (!sales) return null;
  const medians = STEAM_WINDOWS.map(([, window]) => sales[window]?.median ?? null);
  if (medians.every((median) => median === null)) return null;
  return `{${STEAM_WINDOWS.map(([key], index) => `"${key}":${jsonNumberOrNull(medians[index])}`).join(',')}}`;
}

/** `{price, doppler?}`: the default version's price and each phase version's (absent without any phase price). */
function dopplerEntry(item: CompatItem, priceOf: (version: CompatVersion) => string | null): string | null {
  const base = item.versions.default;
  const price = base ? priceOf(base) : null;
  const phases: string[] = [];
  // Most names have no phase version: their entry is the default's alone.
  let phased = false;
  for (const version in item.versions) {
    if (version !== 'default') {
      phased = true;
      break;
    }
  }
  for (const phase of phased ? PHASE_VERSIONS : []) {
    const version = item.versions[phase];
    const phasePrice = version ? priceOf(version) : null;
    if (phasePrice !== null) phases.push(`"${PHASE_LABELS[phase]}":${jsonNumber(phasePrice)}`);
  }
  if (price === null && phases.length === 0) return null;
  return phases.length === 0 ? `{"price":${jsonNumberOrNull(price)}}` : `{"price":${jsonNumberOrNull(price)},"doppler":{${phases.join(',')}}}`;
}

function entryOf(provider: Provider, item: CompatItem): string | null {
  const base = item.versions.default;
  const source = provider.source === null ? undefined : base?.sources[provider.source];
  switch (provider.kind) {
    case 'steam':
      return steamEntry(base);
    case 'bitskins':
      // bitskins' own API wrote its prices as strings, and the upstream file kept them; we have no instant-sale price.
      return source ? `{"price":${jsonDecimalString(source.price)},"instant_sale_price":null}` : null;
    case 'csgotm':
      return source ? jsonDecimalString(source.price) : null;
    case 'skinport':
      // skinport's suggested price is not stored; starting_at is its lowest ask (/v1/items min_price).
      return source ? `{"suggested_price":null,"starting_at":${jsonNumber(source.price)}}` : null;
    case 'consensus':
      return dopplerEntry(item, (version) => version.consensus);
    case 'doppler':
      return dopplerEntry(item, (version) => version.sources[provider.source!]?.price ?? null);
  }
}

/**
 * The oldest source time an item's row uses: each source whose provider has an entry in it (`present`,
 * a bit per column of `columnOf`), and each fresh source behind a consensus when the csgotrader
 * column has an entry.
 */
function oldestOfRow(item: CompatItem, present: number, columnOf: ReadonlyMap<string, number>, consensusColumn: number): number | null {
  const consensusShown = (present & (1 << consensusColumn)) !== 0;
  let oldest: number | null = null;
  for (const name in item.versions) {
    const version = item.versions[name]!;
    for (const source in version.sources) {
      const price = version.sources[source]!;
      const column = columnOf.get(source);
      const counted = (column !== undefined && (present & (1 << column)) !== 0) || (consensusShown && price.fresh && version.consensus !== null);
      if (counted && (oldest === null || price.source_time_ms < oldest)) oldest = price.source_time_ms;
    }
  }
  return oldest;
}

/**
 * Whether two items' rows read the same: each version's consensus and steam windows, and every source's
 * price (the only field a provider's entry reads). Times and freshness aside: a whole-market listing
 * observes every price it lists again, and the row stays while the prices do (its oldest is taken anew).
 */
function sameRow(a: CompatItem, b: CompatItem): boolean {
  let versions = 0;
  for (const name in b.versions) {
    const x = a.versions[name];
    const y = b.versions[name]!;
    if (x === undefined || x.consensus !== y.consensus || x.sales.steam !== y.sales.steam) return false;
    let sources = 0;
    for (const source in y.sources) {
      const price = x.sources[source];
      if (price === undefined || price.price !== y.sources[source]!.price) return false;
      sources += 1;
    }
    for (const _ in x.sources) sources -= 1;
    if (sources !== 0) return false;
    versions += 1;
  }
  for (const _ in a.versions) versions -= 1;
  return versions === 0;
}

const RateDecimal = Decimal.clone({ precision: 40, rounding: Decimal.ROUND_HALF_EVEN });
/** Decimal places of exchange_rates.json's rates (units per USD); ECB rates carry at most 6 significant digits. */
const RATE_PLACES = 8;

/** exchange_rates.json: units of each ECB currency per USD, rate(X) / rate(USD) from the EUR-based set, half-even to 8 places. */
export function exchangeRatesJson(rates: CompatDataset['rates']): string {
  const perEur = rates?.per_eur ?? {};
  const usd = perEur.USD;
  if (usd === undefined || new RateDecimal(usd).lte(0)) return '{"USD":1}';
  const parts = ['"USD":1'];
  for (const currency of Object.keys(perEur).sort()) {
    if (currency === 'USD' || !/^[A-Z]{3}$/.test(currency)) continue;
    const perUsd = new RateDecimal(perEur[currency]!).div(usd).toDecimalPlaces(RATE_PLACES, Decimal.ROUND_HALF_EVEN);
    parts.push(`"${currency}":${jsonNumber(perUsd.toFixed(RATE_PLACES))}`);
  }
  return `{${parts.join(',')}}`;
}

export function csgotraderPricesBuilder(): CompatBuilder {
  // The build's columns, as the kept rows' `present` bits and the oldest rule read them (a stamp per column list).
  let columnOf = new Map<string, number>();
  let consensusColumn = 0;
  // `present`: a bit per column with an entry (the columns are fewer than 32: the fixed providers and our sources).
  const rowTexts = new ItemTexts<{ row: Buffer; present: number }>({
    same: sameRow,
    valuesOnly: true,
    oldest: (text, item) => oldestOfRow(item, text.present, columnOf, consensusColumn),
  });
  const documents = new FormatDocuments();
  return (dataset: CompatDataset): BuiltCompatDocument => {
    const extraSources = dataset.sources.filter((source) => !FIXED_SOURCES.has(source) && !FIXED_FILES.has(source) && PROVIDER_NAME.test(source));
    const providers: Provider[] = [...FIXED_PROVIDERS, ...extraSources.map((source): Provider => ({ file: source, kind: 'doppler', source }))];
    const columns = providers.map((provider) => provider.file);
    // Sources are our marketplaces (ten): a row's columns fit the 32 bits of `present`.
    if (columns.length > 31) throw new Error(`csgotrader-prices: ${columns.length} provider columns, at most 31 are supported`);
    columnOf = new Map(providers.flatMap((provider, index) => (provider.source === null ? [] : [[provider.source, index] as const])));
    consensusColumn = providers.findIndex((provider) => provider.kind === 'consensus');
    const stamp = columns.join(',');
    const rows = new JoinedBytes();
    let listed = 0;
    let oldest: number | null = null;
    for (const item of dataset.items) {
      // Each name's row as JSON text, kept between builds while what it reads and the providers stand (ItemTexts).
      const written = rowTexts.of(item, stamp, () => {
        const row = providers.map((provider) => entryOf(provider, item));
        let present = 0;
        for (let index = 0; index < row.length; index += 1) if (row[index] !== null) present |= 1 << index;
        if (present === 0) return { text: null, oldest: null, usedStamp: true };
        return {
          text: { row: Buffer.from(JSON.stringify([item.market_hash_name, ...row])), present },
          oldest: oldestOfRow(item, present, columnOf, consensusColumn),
          usedStamp: true,
        };
      });
      if (written.text === null) continue;
      rows.push(written.text.row);
      listed |= written.text.present;
      oldest = olderOf(oldest, written.oldest);
    }
    // Our providers are keys of every name whether or not their source has a price now (the upstream wrote
    // every provider on every name, null where it lacked one), so a consumer's shape does not change with
    // the sources enabled; a source beyond them appears once it has an entry.
    const shown = columns.filter((file, index) => FIXED_FILES.has(file) || (listed & (1 << index)) !== 0);
    return documents.document(
      rows,
      `{"providers":${JSON.stringify(shown)},"columns":${JSON.stringify(columns)},"rows":[`,
      `],"exchange_rates":${JSON.stringify(exchangeRatesJson(dataset.rates))}}`,
      oldest,
    );
  };
}

function isCsgotraderDocument(value: unknown): value is CsgotraderDocument {
  const candidate = value as CsgotraderDocument | null;
  return (
    typeof candidate === 'object' &&
    candidate !== null &&
    Array.isArray(candidate.rows) &&
    Array.isArray(candidate.columns) &&
    Array.isArray(candidate.providers) &&
    typeof candidate.exchange_rates === 'string'
  );
}

/** prices_v6.json: every name with every provider of the document (null where it has none; steam's four nulls). */
function pricesV6Json(document: CsgotraderDocument): string {
  const parts: string[] = [];
  const cells = document.providers.map((provider) => [provider, 1 + document.columns.indexOf(provider)] as const);
  for (const row of document.rows) {
    const fields = cells.map(([provider, at]) => `"${provider}":${row[at] ?? (provider === 'steam' ? STEAM_WITHOUT_DATA : 'null')}`);
    parts.push(`${JSON.stringify(row[0])}:{${fields.join(',')}}`);
  }
  return `{${parts.join(',')}}`;
}

/** `<provider>.json`: the names the provider has an entry for. */
function providerJson(document: CsgotraderDocument, provider: string): string {
  if (!document.providers.includes(provider)) return '{}';
  const at = 1 + document.columns.indexOf(provider);
  const parts: string[] = [];
  for (const row of document.rows) {
    const entry = row[at];
    if (entry !== null && entry !== undefined) parts.push(`${JSON.stringify(row[0])}:${entry}`);
  }
  return `{${parts.join(',')}}`;
}

/**
 * A file the original host did not have: 404, as a static file host answers (its own body is not JSON
 * a client reads), here with our shared error body like every other 404 of the API.
 */
const NOT_FOUND: CompatAnswer = {
  status: 404,
  ours: { message: 'No such price file: prices_v6.json, exchange_rates.json or <provider>.json (see docs/compat/csgotrader.md).', field: 'path.file' },
};

/**
 * Each file's text, written once per stored document (the parsed document is shared by every request of
 * its snapshot, and the route asks the handler before it looks up the bytes it keeps per memoKey).
 */
const writtenFiles = new WeakMap<CsgotraderDocument, Map<string, string>>();

function written(document: CsgotraderDocument, file: string, write: () => string): string {
  let files = writtenFiles.get(document);
  if (!files) writtenFiles.set(document, (files = new Map()));
  let text = files.get(file);
  if (text === undefined) files.set(file, (text = write()));
  return text;
}

/** `GET /compat/csgotrader/latest/:file`: prices_v6.json, exchange_rates.json or `<provider>.json`; anything else 404. */
export const csgotraderFile: CompatHandler = (document, request) => {
  if (!isCsgotraderDocument(document)) throw new Error('csgotrader-prices: the stored document is not of this format');
  const file = request.params.file ?? '';
  if (file === 'prices_v6.json') return { status: 200, body: written(document, file, () => pricesV6Json(document)), memoKey: file };
  if (file === 'exchange_rates.json') return { status: 200, body: document.exchange_rates, memoKey: file };
  const provider = file.endsWith('.json') ? file.slice(0, -'.json'.length) : '';
  // A provider we serve with no entry in this snapshot (its source has no price now) is an empty file, not a missing one.
  if (document.providers.includes(provider)) return { status: 200, body: written(document, file, () => providerJson(document, provider)), memoKey: file };
  return NOT_FOUND;
};
