import Decimal from 'decimal.js';
import { PHASE_LABELS } from '../catalog/identity.ts';
import type { SalesWindowName } from '../sources/types.ts';
import { FormatDocuments, ItemTexts, JoinedBytes } from './item-texts.ts';
import { jsonNumber } from './json-number.ts';
import type {
  BuiltCompatDocument,
  CompatAnswer,
  CompatBuilder,
  CompatContext,
  CompatDataset,
  CompatHandler,
  CompatItem,
  CompatSalesWindow,
  CompatVersion,
} from './types.ts';

/**
 * Skinport's public API as a drop-in format (docs/design.md §20; docs/compat/skinport.md):
 *
 *   GET /compat/skinport/v1/items?app_id=730&currency=EUR&tradable=0
 *   GET /compat/skinport/v1/sales/history?app_id=730&currency=EUR&market_hash_name=A,B
 *
 * Both answer bare arrays in Skinport's field order and types (JSON numbers, unix seconds, `null`
 * prices when nothing is listed or sold). A real `/v1/items` row, as Skinport writes it:
 *
 *   {"market_hash_name":"★ Bayonet | Doppler (Factory New)","version":"Phase 4","currency":"EUR",
 *    "suggested_price":401.2,"item_page":"https://skinport.com/item/bayonet-doppler-factory-new+phase-4",
 *    "market_page":"https://skinport.com/market/knife/bayonet?item=Doppler&phase=5","min_price":412.06,
 *    "max_price":980,"mean_price":520.31,"median_price":455,"quantity":26,"created_at":1535988253,
 *    "updated_at":1729600814}
 *
 * and a `/v1/sales/history` row: `{market_hash_name, version, currency, item_page, market_page,
 * last_24_hours: {min, max, avg, median, volume}, last_7_days, last_30_days, last_90_days}`.
 *
 * The stored documents hold USD decimal strings; a request's currency is applied when it is first
 * asked for (memoised per currency), and every number is written from its decimal text, never
 * through a JS float.
 */

/** Skinport's currencies (its docs' list; skinport.py `Currency`, skinport-rs `Currency`). */
export const SKINPORT_CURRENCIES: readonly string[] = [
  'AUD',
  'BRL',
  'CAD',
  'CHF',
  'CNY',
  'CZK',
  'DKK',
  'EUR',
  'GBP',
  'HRK',
  'NOK',
  'PLN',
  'RUB',
  'SEK',
  'TRY',
  'USD',
];
/** Skinport's default currency when `currency` is absent. */
export const SKINPORT_DEFAULT_CURRENCY = 'EUR';
const CS2_APP_ID = '730';
/** Skinport's sales windows, in its field order. */
const WINDOW_NAMES: readonly SalesWindowName[] = ['24h', '7d', '30d', '90d'];
const WINDOW_FIELDS: Readonly<Record<SalesWindowName, string>> = { '24h': 'last_24_hours', '7d': 'last_7_days', '30d': 'last_30_days', '90d': 'last_90_days' };

/** Our phase versions → Skinport's `version` labels ("Phase 2", "Black Pearl"); `default` is `null`. */
const VERSION_LABELS: Readonly<Record<string, string>> = PHASE_LABELS;

/** A version Skinport lists (default and the Doppler phases) → its label; undefined for ours alone (patterns, tiers). */
export function skinportVersionLabel(version: string): string | null | undefined {
  if (version === 'default') return null;
  return VERSION_LABELS[version];
}

/**
 * Skinport's item page, by the rule its own links follow (`★ Bayonet | Doppler (Factory New)`, Phase 4
 * → `https://skinport.com/item/bayonet-doppler-factory-new+phase-4`; `StatTrak™ AK-47 | Redline
 * (Field-Tested)` → `…/item/stattrak-ak-47-redline-field-tested`). Written only for rows whose data is
 * Skinport's own, where Skinport lists the item.
 */
export function skinportItemPage(marketHashName: string, version: string | null): string {
  const slug = (text: string) =>
    text
      .toLowerCase()
      .replace(/[™★|()]/g, ' ')
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '');
  return `https://skinport.com/item/${slug(marketHashName)}${version === null ? '' : `+${slug(version)}`}`;
}

// ---- stored documents (USD decimal strings) ---------------------------------------------------

type SkinportItemRow = {
  market_hash_name: string;
  version: string | null;
  /** Our consensus: Skinport's suggested price is its estimate of the item's value; ours is this. */
  suggested_price: string | null;
  item_page: string | null;
  min_price: string | null;
  median_price: string | null;
  quantity: number | null;
  created_at: number | null;
  updated_at: number;
};
export type SkinportItemsDocument = { rows: SkinportItemRow[] };

type SkinportSalesWindowRow = { min: string | null; max: string | null; avg: string | null; median: string | null; volume: number };
type SkinportSalesRow = {
  market_hash_name: string;
  version: string | null;
  item_page: string | null;
  windows: Partial<Record<SalesWindowName, SkinportSalesWindowRow>>;
};
export type SkinportSalesDocument = { rows: SkinportSalesRow[] };

const seconds = (ms: number) => Math.floor(ms / 1000);

/** The versions Skinport lists, in a stable order: default first, then the phases as stored. */
function skinportVersions(versions: Record<string, CompatVersion>): [string, string | null, CompatVersion][] {
  const listed: [string, string | null, CompatVersion][] = [];
  if (versions.default) listed.push(['default', null, versions.default]);
  for (const [version, data] of Object.entries(versions)) {
    if (version === 'default') continue;
    const label = skinportVersionLabel(version);
    if (label !== undefined) listed.push([version, label, data]);
  }
  return listed;
}

class OldestSourceTime {
  value: number | null = null;
  add(ms: number): void {
    if (this.value === null || ms < this.value) this.value = ms;
  }
}

/** Listings across the fresh markets behind a consensus (docs/design.md §19's liquidity.listings); null when none says. */
function freshListings(data: CompatVersion): number | null {
  let listings: number | null = null;
  for (const name in data.sources) {
    const source = data.sources[name]!;
    if (source.fresh && source.quantity !== null) listings = (listings ?? 0) + source.quantity;
  }
  return listings === 0 ? null : listings;
}

/**
 * A row's `updated_at` (unix seconds) and the source times it stands on (added to `oldest`): the skinport
 * price's time where it is fresh, else the newest of the fresh sources behind the consensus, else the
 * build time (nothing observed it).
 */
function rowUpdatedAt(data: CompatVersion, builtAt: number, oldest: OldestSourceTime): number {
  const skinport = data.sources.skinport;
  if (skinport?.fresh) {
    oldest.add(skinport.source_time_ms);
    return seconds(skinport.source_time_ms);
  }
  if (data.consensus === null) return builtAt;
  let newest: number | null = null;
  for (const name in data.sources) {
    const source = data.sources[name]!;
    if (!source.fresh) continue;
    oldest.add(source.source_time_ms);
    if (newest === null || source.source_time_ms > newest) newest = source.source_time_ms;
  }
  return newest === null ? builtAt : seconds(newest);
}

/** Whether two versions' rows carry the same values (their `updated_at` aside). */
function sameItemsRow(a: CompatVersion, b: CompatVersion): boolean {
  if (a.consensus !== b.consensus) return false;
  const x = a.sources.skinport;
  const y = b.sources.skinport;
  const xFresh = x?.fresh === true;
  if (xFresh !== (y?.fresh === true)) return false;
  if (xFresh) return x!.price === y!.price && x!.median_price === y!.median_price && x!.quantity === y!.quantity;
  return a.consensus === null || freshListings(a) === freshListings(b);
}

/**
 * Whether two items' rows carry the same values: the same versions listed, each row the same. Their
 * times aside: a whole-market listing observes every price again, and the rows' `updated_at` are
 * written anew each build (skinportItemsBuilder).
 */
function sameItemsRows(before: CompatItem, now: CompatItem): boolean {
  if (before.first_seen_ms !== now.first_seen_ms) return false;
  let versions = 0;
  for (const name in now.versions) {
    if (skinportVersionLabel(name) === undefined) continue;
    const other = before.versions[name];
    if (other === undefined || !sameItemsRow(other, now.versions[name]!)) return false;
    versions += 1;
  }
  for (const name in before.versions) if (skinportVersionLabel(name) !== undefined) versions -= 1;
  return versions === 0;
}

/** An item's rows as kept: each listed version and its row's JSON text up to its `updated_at` value. */
type SkinportItemsText = {
  versions: string[];
  heads: Buffer[];
  /** The times last written after the heads, for one item object (an item never changes: its times stand), unless they used the build time. */
  timed: { item: CompatItem; times: Buffer[]; oldest: number | null } | null;
};

/**
 * docs/design.md §20: from the skinport source where it has the version (fresh), else from the consensus of
 * the fresh sources; what we do not have is `null`, as Skinport writes it. Each item's rows are kept
 * as JSON text while their values stand (ItemTexts); the `updated_at` that ends each row is written
 * per build from the item's times.
 */
export function skinportItemsBuilder(): CompatBuilder {
  const itemTexts = new ItemTexts<SkinportItemsText>({ same: sameItemsRows, valuesOnly: true });
  const documents = new FormatDocuments();
  // `<seconds>}` per time, kept across builds (most rows of a snapshot share a few times): a row whose
  // values and time stand is the same pieces, so an unchanged document is seen as one (JoinedBytes.sameAs).
  let timeTexts = new Map<number, Buffer>();
  const timeText = (time: number): Buffer => {
    let text = timeTexts.get(time);
    if (text === undefined) {
      if (timeTexts.size >= 100_000) timeTexts = new Map();
      timeTexts.set(time, (text = Buffer.from(`${time}}`)));
    }
    return text;
  };
  return (dataset: CompatDataset): BuiltCompatDocument => {
    const oldest = new OldestSourceTime();
    const parts = new JoinedBytes();
    const builtAt = seconds(dataset.built_at_ms);
    for (const item of dataset.items) {
      const written = itemTexts.of(item, '', () => {
        const createdAt = item.first_seen_ms === null ? null : seconds(item.first_seen_ms);
        const text: SkinportItemsText = { versions: [], heads: [], timed: null };
        for (const [version, label, data] of skinportVersions(item.versions)) {
          const skinport = data.sources.skinport;
          const row: Omit<SkinportItemRow, 'updated_at'> = {
            market_hash_name: item.market_hash_name,
            version: label,
            suggested_price: data.consensus,
            item_page: null,
            min_price: null,
            median_price: null,
            quantity: 0,
            created_at: createdAt,
          };
          if (skinport?.fresh) {
            row.item_page = skinportItemPage(item.market_hash_name, label);
            row.min_price = skinport.price;
            row.median_price = skinport.median_price;
            row.quantity = skinport.quantity;
          } else if (data.consensus !== null) {
            row.min_price = data.consensus;
            row.quantity = freshListings(data);
          }
          const json = JSON.stringify(row);
          text.versions.push(version);
          text.heads.push(Buffer.from(`${json.slice(0, -1)},"updated_at":`));
        }
        return { text: text.versions.length === 0 ? null : text, oldest: null, usedStamp: false };
      });
      const text = written.text;
      if (text === null) continue;
      let timed = text.timed;
      if (timed === null || timed.item !== item) {
        // This item's times (its object's: kept while no row used the build time, which moves each build).
        const itemOldest = new OldestSourceTime();
        const times: Buffer[] = [];
        let usedBuildTime = false;
        for (const version of text.versions) {
          const time = rowUpdatedAt(item.versions[version]!, builtAt, itemOldest);
          usedBuildTime ||= time === builtAt;
          times.push(timeText(time));
        }
        timed = { item, times, oldest: itemOldest.value };
        text.timed = usedBuildTime ? null : timed;
      }
      for (let index = 0; index < text.heads.length; index += 1) {
        parts.push(text.heads[index]!);
        parts.append(timed.times[index]!);
      }
      if (timed.oldest !== null) oldest.add(timed.oldest);
    }
    // The text of SkinportItemsDocument.
    return documents.document(parts, '{"rows":[', ']}', oldest.value);
  };
}

function salesWindowRow(window: CompatSalesWindow): SkinportSalesWindowRow {
  // Skinport writes null prices when nothing sold, whatever else it has.
  if (window.volume === 0) return { min: null, max: null, avg: null, median: null, volume: 0 };
  return { min: window.min, max: window.max, avg: window.mean, median: window.median, volume: window.volume };
}

/**
 * docs/design.md §20: a version's windows from the skinport source where it has any (Skinport's own sales,
 * with its item page), else the windows combined over the sources that publish sales (docs/design.md §19);
 * a window neither has is left out, never written as zero sales. Versions without any window are
 * not listed.
 */
export const buildSkinportSales: CompatBuilder = (dataset: CompatDataset): BuiltCompatDocument => {
  const oldest = new OldestSourceTime();
  const rows: SkinportSalesRow[] = [];
  for (const item of dataset.items) {
    for (const [, label, data] of skinportVersions(item.versions)) {
      const own = data.sales.skinport;
      const ownWindows = own && Object.keys(own).length > 0;
      const chosen = ownWindows ? own : data.combined;
      const windows: SkinportSalesRow['windows'] = {};
      for (const name of WINDOW_NAMES) {
        const window = chosen[name];
        if (!window) continue;
        windows[name] = salesWindowRow(window);
        if (window.source_time_ms !== undefined) oldest.add(window.source_time_ms);
      }
      if (Object.keys(windows).length === 0) continue;
      rows.push({
        market_hash_name: item.market_hash_name,
        version: label,
        item_page: ownWindows ? skinportItemPage(item.market_hash_name, label) : null,
        windows,
      });
    }
  }
  // Windows without an observation time are not given one: the answer's age is claimed only from those that have it.
  return { value: { rows } satisfies SkinportSalesDocument, oldest_source_ms: oldest.value };
};

// ---- requests --------------------------------------------------------------------------------

/** Skinport's error body, as its clients read it (skinport.py maps `errors[].id` → `errors[].message`). */
export function skinportError(message: string): CompatAnswer {
  return { status: 400, body: { errors: [{ id: 'validation_error', message }] } };
}

/** `app_id` (730, the default) and `currency` (Skinport's list, EUR by default) → the currency, or the error. */
function requestCurrency(query: URLSearchParams, context: CompatContext): { currency: string } | { error: CompatAnswer } {
  const appId = query.get('app_id');
  if (appId !== null && appId.trim() !== CS2_APP_ID) return { error: skinportError('app_id: only 730 (Counter-Strike 2) is served here') };
  const asked = query.get('currency');
  const currency = asked === null || asked.trim() === '' ? SKINPORT_DEFAULT_CURRENCY : asked.trim().toUpperCase();
  if (!SKINPORT_CURRENCIES.includes(currency)) return { error: skinportError(`currency: must be one of ${SKINPORT_CURRENCIES.join(', ')}`) };
  if (!context.currencies.includes(currency)) return { error: skinportError(`currency: ${currency} cannot be converted to now (no exchange rate)`) };
  return { currency };
}

/** Skinport writes cents in every one of its currencies. */
const SKINPORT_PLACES = 2;

type MoneyWriter = (usd: string | null) => string;

/**
 * USD decimals in `currency` as Skinport's JSON numbers ("18.20" → 18.2), rounded half-even to cents,
 * never through a float. One writer per answer: a list repeats many prices, each converted once.
 */
function moneyWriter(currency: string, context: CompatContext): MoneyWriter {
  const written = new Map<string, string>();
  return (usd) => {
    if (usd === null) return 'null';
    let text = written.get(usd);
    if (text === undefined) {
      let converted = context.convert(usd, currency);
      if (converted === null) text = 'null';
      else {
        const point = converted.indexOf('.');
        if (point >= 0 && converted.length - point - 1 > SKINPORT_PLACES)
          converted = new Decimal(converted).toDecimalPlaces(SKINPORT_PLACES, Decimal.ROUND_HALF_EVEN).toFixed();
        text = jsonNumber(converted);
      }
      written.set(usd, text);
    }
    return text;
  };
}

const integerText = (value: number | null) => (value === null ? 'null' : String(value));
const stringText = (value: string | null) => (value === null ? 'null' : JSON.stringify(value));

function itemsText(document: SkinportItemsDocument, currency: string, context: CompatContext): string {
  const money = moneyWriter(currency, context);
  const currencyField = JSON.stringify(currency);
  const parts: string[] = [];
  for (const row of document.rows) {
    const listed = row.quantity !== 0;
    const min = listed ? money(row.min_price) : 'null';
    const median = listed ? money(row.median_price) : 'null';
    parts.push(
      `{"market_hash_name":${JSON.stringify(row.market_hash_name)},"version":${stringText(row.version)},"currency":${currencyField},` +
        `"suggested_price":${money(row.suggested_price)},"item_page":${stringText(row.item_page)},"market_page":null,` +
        `"min_price":${min},"max_price":null,"mean_price":null,"median_price":${median},` +
        `"quantity":${integerText(row.quantity)},"created_at":${integerText(row.created_at)},"updated_at":${row.updated_at}}`,
    );
  }
  return `[${parts.join(',')}]`;
}

/**
 * Whole-list answers already written, per stored document and currency. The route keeps each
 * answer's encoded bytes per memoKey, but it asks the handler first: without this, every request
 * would convert and write the whole list again. An answer is reused only while the rates convert a
 * probe amount to the same figure (the rates change within a snapshot's life).
 */
const writtenLists = new WeakMap<object, Map<string, { fingerprint: string; text: string }>>();
/** A few currencies per document (the route keeps more, encoded); the least recently asked go first. */
const WRITTEN_PER_DOCUMENT = 4;
const RATE_PROBE_USD = '1000000000000000';

function writtenList(document: object, currency: string, context: CompatContext, write: () => string): string {
  const fingerprint = context.convert(RATE_PROBE_USD, currency) ?? '';
  let kept = writtenLists.get(document);
  if (!kept) writtenLists.set(document, (kept = new Map()));
  const hit = kept.get(currency);
  kept.delete(currency);
  const text = hit && hit.fingerprint === fingerprint ? hit.text : write();
  kept.set(currency, { fingerprint, text });
  if (kept.size > WRITTEN_PER_DOCUMENT) kept.delete(kept.keys().next().value!);
  return text;
}

const TRADABLE_VALUES = new Set(['0', '1', 'true', 'false']);

/** `GET /compat/skinport/v1/items`: the whole list in the asked currency; `tradable` is accepted and changes nothing (docs/compat/skinport.md). */
export const skinportItems: CompatHandler = (document, request, context) => {
  const asked = requestCurrency(request.query, context);
  if ('error' in asked) return asked.error;
  const tradable = request.query.get('tradable');
  if (tradable !== null && tradable !== '' && !TRADABLE_VALUES.has(tradable.trim().toLowerCase())) {
    return skinportError('tradable: must be 0, 1, true or false');
  }
  const items = document as SkinportItemsDocument;
  const text = writtenList(items, asked.currency, context, () => itemsText(items, asked.currency, context));
  return { status: 200, body: text, memoKey: `skinport-items:${asked.currency}` };
};

function salesRowText(row: SkinportSalesRow, currency: string, money: MoneyWriter): string {
  let text =
    `{"market_hash_name":${JSON.stringify(row.market_hash_name)},"version":${stringText(row.version)},"currency":${JSON.stringify(currency)},` +
    `"item_page":${stringText(row.item_page)},"market_page":null`;
  for (const name of WINDOW_NAMES) {
    const window = row.windows[name];
    if (!window) continue;
    text +=
      `,"${WINDOW_FIELDS[name]}":{"min":${money(window.min)},"max":${money(window.max)},` +
      `"avg":${money(window.avg)},"median":${money(window.median)},"volume":${window.volume}}`;
  }
  return `${text}}`;
}

/** Rows by name with the name's place in the list, built once per stored document (shared by every request of its snapshot). */
type SalesIndex = Map<string, { position: number; rows: SkinportSalesRow[] }>;
const salesIndexes = new WeakMap<SkinportSalesDocument, SalesIndex>();

function salesIndex(document: SkinportSalesDocument): SalesIndex {
  let index = salesIndexes.get(document);
  if (!index) {
    index = new Map();
    for (const row of document.rows) {
      const entry = index.get(row.market_hash_name);
      if (entry) entry.rows.push(row);
      else index.set(row.market_hash_name, { position: index.size, rows: [row] });
    }
    salesIndexes.set(document, index);
  }
  return index;
}

/**
 * The rows of the names asked for, as real clients send them (comma-joined), in the list's order. A
 * whole value that is itself a name (one with a comma in it) counts too.
 */
function askedRows(value: string, index: SalesIndex): SkinportSalesRow[] {
  const names = new Set<string>();
  if (index.has(value)) names.add(value);
  for (const part of value.split(',')) {
    const name = part.trim();
    if (index.has(name)) names.add(name);
  }
  return [...names]
    .map((name) => index.get(name)!)
    .sort((a, b) => a.position - b.position)
    .flatMap((entry) => entry.rows);
}

/**
 * `GET /compat/skinport/v1/sales/history`: every listed version, or those of the names asked for
 * (comma-joined `market_hash_name`). The whole list is memoised per currency; a name-filtered
 * answer is small and is not.
 */
export const skinportSales: CompatHandler = (document, request, context) => {
  const asked = requestCurrency(request.query, context);
  if ('error' in asked) return asked.error;
  const sales = document as SkinportSalesDocument;
  const filter = request.query.get('market_hash_name');
  if (filter === null || filter.trim() === '') {
    const text = writtenList(sales, asked.currency, context, () => {
      const money = moneyWriter(asked.currency, context);
      return `[${sales.rows.map((row) => salesRowText(row, asked.currency, money)).join(',')}]`;
    });
    return { status: 200, body: text, memoKey: `skinport-sales:${asked.currency}` };
  }
  const rows = askedRows(filter, salesIndex(sales));
  const money = moneyWriter(asked.currency, context);
  return { status: 200, body: `[${rows.map((row) => salesRowText(row, asked.currency, money)).join(',')}]` };
};
