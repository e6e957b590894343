import type { SalesWindowName } from '../sources/types.ts';

/**
 * Drop-in formats (docs/design.md §20; docs/compat/): the price files and endpoints existing tools read,
 * served from our data. This module is the contract between the snapshot build, which gathers a
 * CompatDataset once per keyless price snapshot and builds each stored document from it
 * (shared/compat/store.ts), the format modules (shared/compat/<format>.ts), which turn the dataset
 * into their stored documents and answer requests from them, and the routes (api/routes/compat.ts).
 *
 * Every money value in a dataset and in a stored document is USD, as a decimal string (never a JS
 * number until a format writes its JSON number, from the decimal's text); conversion to another
 * currency happens when a request asks for one (CompatContext.convert).
 */

/** One source's latest price of one item and version, as stored (latest_prices). */
export type CompatSourcePrice = {
  /** The lowest ask, USD decimal string. */
  price: string;
  median_price: string | null;
  bid: string | null;
  volume_7d: number | null;
  /** Listings at the source (steam: sell_listings; skinport: quantity), null where it does not say. */
  quantity: number | null;
  /** When the source observed it, ms since the epoch. */
  source_time_ms: number;
  /** The same time as the keyless list writes it (ISO 8601, milliseconds, UTC): a new build compares it with its rows' unparsed (absent: never kept). */
  source_time?: string;
  /** Whether the price was fresh when the snapshot was built (shared/prices/freshness.ts). */
  fresh: boolean;
};

/** One source's sales over one window (source_sales), USD decimal strings; prices null when nothing sold. */
export type CompatSalesWindow = {
  median: string | null;
  mean: string | null;
  min: string | null;
  max: string | null;
  volume: number;
  /** When the window was observed (source_sales.source_time), ms since the epoch: a document's `X-Source-Age`; absent where not known. */
  source_time_ms?: number;
};

export type CompatVersion = {
  /** Keyed by our source name (skinport, steam, csfloat, csmarket, lisskins, waxpeer, whitemarket, bitskins, csdeals, skinbaron). */
  sources: Record<string, CompatSourcePrice>;
  /** The cross-market consensus price of the fresh sources at the build (docs/design.md §13), null when none was fresh. */
  consensus: string | null;
  /** Each source's sales windows (skinport: all four; steam: 24h). */
  sales: Record<string, Partial<Record<SalesWindowName, CompatSalesWindow>>>;
  /** The windows combined over sources (shared/prices/sales.ts), absent where no source has one. */
  combined: Partial<Record<SalesWindowName, CompatSalesWindow>>;
};

export type CompatItem = {
  market_hash_name: string;
  catalog_id: string;
  /** When the item entered our catalog, ms since the epoch (steamapis `first_seen`). */
  first_seen_ms: number | null;
  /** How many source prices its versions hold (0: an item with windows and no price). A gathered build keeps an item by the rows it was made from, in their order (shared/compat/dataset.ts). */
  price_rows?: number;
  /** `default` and every stored phase version (`phase-2`, `ruby`, …: shared/catalog/identity.ts). */
  versions: Record<string, CompatVersion>;
};

/** What one snapshot's compat documents are built from. Items in byte order of market_hash_name. */
export type CompatDataset = {
  /** The snapshot's build time (`Last-Modified`), ms since the epoch. */
  built_at_ms: number;
  /** The sales generation (sql/0030) the windows were read at: documents built from the windows alone are kept while it stands. */
  sales_generation: string;
  items: CompatItem[];
  /** Every source with a price in the dataset, in byte order. */
  sources: string[];
  /** The newest ECB rates (units per EUR, decimal text) at the build, for csgotrader's exchange_rates.json; null without any. */
  rates: { as_of: string; per_eur: Record<string, string> } | null;
};

/** The documents stored per snapshot, each built once by its format module. */
export const COMPAT_DOCUMENTS = ['csgotrader-prices', 'skinport-items', 'skinport-sales', 'steam-overview', 'steamapis-items'] as const;
export type CompatDocumentName = (typeof COMPAT_DOCUMENTS)[number];
/**
 * Documents built from the sales windows alone (no price, no build time): a snapshot's build copies
 * the newest one stored at the same sales generation instead of building it again.
 */
export const COMPAT_SALES_DOCUMENTS: ReadonlySet<CompatDocumentName> = new Set(['skinport-sales']);

/**
 * A stored document: its JSON-able value, and the oldest source time it used (`X-Source-Age`).
 * `unchanged`: the value is byte for byte the one this builder made last (the store may point at
 * where it wrote that one rather than write it again). `release`: the caller is done with the value's
 * bytes (Redis has them), and the builder may write a later document into the same memory.
 */
export type BuiltCompatDocument = { value: unknown; oldest_source_ms: number | null; unchanged?: boolean; release?: () => void };

/** A built document's JSON bytes: a Buffer `value` is its UTF-8 text already, a string `value` its text (the builders write their text item by item). */
export function documentBytes(document: BuiltCompatDocument): Buffer {
  if (Buffer.isBuffer(document.value)) return document.value;
  return Buffer.from(typeof document.value === 'string' ? document.value : JSON.stringify(document.value));
}

/** A built document's JSON text. */
export function documentText(document: BuiltCompatDocument): string {
  if (Buffer.isBuffer(document.value)) return document.value.toString('utf8');
  return typeof document.value === 'string' ? document.value : JSON.stringify(document.value);
}

/** A format module's builder: pure, from the dataset. */
export type CompatBuilder = (dataset: CompatDataset) => BuiltCompatDocument;

/** What a format's request handler may use besides its stored document. */
export type CompatContext = {
  /**
   * A USD decimal string in `currency` (ISO 4217), exact, rounded half-even to the currency's minor
   * units, as a decimal string; null when `currency` is not one we can convert to now.
   */
  convert: (usd: string, currency: string) => string | null;
  /** The currencies `convert` accepts now. */
  currencies: readonly string[];
};

/**
 * A request's answer: a JSON value (or its text) served with the route's caching headers; or an
 * error in the original's own shape and status. `memoKey`: answers with the same key for one snapshot
 * are the same bytes (the route keeps them encoded, once); absent: not memoised (a small per-name answer).
 */
export type CompatAnswer =
  | { status: 200; body: unknown; memoKey?: string }
  /** An error in the original's shape, where the original documents one. */
  | { status: 400 | 404; body: unknown }
  /**
   * Our shared error body, where the original documents none: 400 `invalid_request` naming the field,
   * or 404 `not_found` (csgotrader's files came from a static host, whose missing-file answer is not JSON).
   */
  | { status: 400 | 404; ours: { message: string; field: string } };

/** A request as a format handler sees it: path parameters and the raw query (unknown parameters are ignored, as the originals do). */
export type CompatRequest = { params: Record<string, string>; query: URLSearchParams };

/** One route's handler: its stored document (parsed, shared by every request of the snapshot) and the request. */
export type CompatHandler = (document: unknown, request: CompatRequest, context: CompatContext) => CompatAnswer;
