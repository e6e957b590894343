import type { FxRates } from '../fx/repository.ts';
import type { Logger } from '../platform/logger.ts';
import type { SourceName } from '../platform/source-names.ts';

/** One normalised upstream price: decimal strings only, never JS numbers (docs/design.md §3). */
export type SourceObservation = {
  market_hash_name: string;
  /** `default` or a phase version (`phase-2`, `ruby`, …), see shared/catalog/identity.ts. */
  version: string;
  /** The lowest ask (skinport min_price, steam search's sell_price, csfloat cheapest listing), e.g. "2.30". */
  price: string;
  median_price: string | null;
  /** The highest buy order, a decimal string (docs/design.md §13: csmarket's `buy_order`); null where the source has none. */
  bid: string | null;
  /** Sales in the last 7 days (csmarket `popularity_7d`), null where the source does not say. */
  volume_7d: number | null;
  /**
   * Units behind the price, listings: skinport `quantity`, csfloat listings seen, steam search's
   * `sell_listings` (docs/design.md §19: priceoverview's `volume` is sales, a sales window). Null when not given.
   */
  quantity: number | null;
  /** When the upstream says the price was observed (or the fetch time when it says nothing). */
  source_time: Date;
  /**
   * The upstream's own price when it is not in USD (docs/design.md §14: skinbaron's EUR), exactly as written;
   * `price` is then its USD conversion. Absent (or null) for sources that price in USD.
   */
  original?: OriginalPrice | null;
};

/** A price in the currency the upstream wrote it in: `{price: "12.5", currency: "EUR"}`. */
export type OriginalPrice = { price: string; currency: string };

/** docs/design.md §19's sales windows: sales in the last 24 hours, 7, 30 and 90 days. */
export const SALES_WINDOWS = ['24h', '7d', '30d', '90d'] as const;
export type SalesWindowName = (typeof SALES_WINDOWS)[number];

/**
 * One source's sales of one item and version over one window (docs/design.md §19), normalised: decimal USD
 * strings, `volume` the number of units sold. A source that publishes only some statistics leaves the
 * others null (Steam's priceoverview: `median` and `volume` over 24 h, no mean, min or max); prices are
 * null when `volume` is 0 (nothing sold: the window is known and empty).
 */
export type SalesObservation = {
  market_hash_name: string;
  version: string;
  window: SalesWindowName;
  median: string | null;
  mean: string | null;
  min: string | null;
  max: string | null;
  volume: number;
  source_time: Date;
};

/** An item image the upstream names: Steam search's `asset_description.icon_url`, the path segment item_icons stores. */
export type IconObservation = { market_hash_name: string; icon_url: string };

export type SourceFetchResult = {
  observations: SourceObservation[];
  /** Sales windows the fetch read (skinport's sales history, steam priceoverview's 24 h); absent: none. */
  sales?: SalesObservation[];
  /** Item images the fetch saw (steam search); absent: none. */
  icons?: IconObservation[];
  /** Rows present upstream but malformed (missing/invalid fields): counted, never fatal. */
  skipped: number;
  /**
   * Names the upstream answered it does not know (steam `{"success":false}`). Whole-market sources
   * (skinport, csfloat) report 0: names they send that the catalog lacks are counted at ingest.
   */
  unknown: number;
  /** HTTP requests made. */
  requests: number;
};

/**
 * What a multi-request fetch (steam's names, csfloat's pages) had gathered when it was stopped by an
 * error: well-formed and safe to write, but incomplete. Single-request sources never set it.
 */
export type PartialResult = { partial?: SourceFetchResult };

/** Thrown when the upstream refuses for now (429, or our own request budget is spent). */
export class SourceRateLimitedError extends Error {
  /** `upstream`: the upstream answered 429; `budget`: our shared request budget (shared/sources/budget.ts) is spent or blocked. */
  readonly origin: 'upstream' | 'budget';
  partial?: SourceFetchResult;

  constructor(
    readonly source: SourceName,
    readonly retryAfterMs: number,
    options: { origin?: 'upstream' | 'budget' } & PartialResult = {},
  ) {
    super(`${source} is rate-limited for ${Math.ceil(retryAfterMs / 1000)} s (${options.origin ?? 'upstream'})`);
    this.name = 'SourceRateLimitedError';
    this.origin = options.origin ?? 'upstream';
    this.partial = options.partial;
  }
}

/** Thrown for upstream failures (5xx and other unexpected statuses, network errors, timeouts, unparseable bodies). */
export class SourceUnavailableError extends Error {
  partial?: SourceFetchResult;

  constructor(
    readonly source: SourceName,
    message: string,
    options: PartialResult = {},
  ) {
    super(`${source}: ${message}`);
    this.name = 'SourceUnavailableError';
    this.partial = options.partial;
  }
}

export type FetchContext = {
  baseUrl: string;
  log: Logger;
  /** Per-request timeout (connect, headers and body), through AbortSignal.timeout. */
  timeoutMs: number;
  /**
   * Called before every HTTP request; throws SourceRateLimitedError when the budget is spent
   * (createRequestBudget(...).acquire). After an upstream 429 the caller (the ingest run) is the one
   * that calls budget.blockUntil: adapters only speak HTTP.
   */
  acquire: () => Promise<void>;
  /** Market hash names to ask for, for sources that read one item per request (steam's priceoverview). Ignored by the others. */
  names: string[];
  /**
   * Where a paging source resumes between runs (steam's search/render `start`, docs/design.md §19): read at the
   * start of a run, written after every page read. Absent: every run starts at the beginning.
   */
  cursor?: SourceCursor;
  now: () => Date;
  /**
   * Secret for upstreams that take one (csfloat `Authorization`, SOURCE_CSFLOAT_API_KEY; waxpeer's
   * `api` query, SOURCE_WAXPEER_KEY): sent when set, never logged.
   */
  apiKey?: string;
  /**
   * The newest stored exchange rates, given to sources that price in another currency than USD
   * (SourceAdapter.priceCurrency): the run fails before any request when none are stored.
   */
  rates?: FxRates;
  /**
   * Paging sources (csfloat): listings asked per page (default: the real upstream's maximum, 50) and
   * pages per run (default: what fits its hourly budget at its default interval). A local simulator
   * accepts up to 1000 per page. Steam: search pages per run (default none) of at most 100 rows.
   */
  pageSize?: number;
  maxPages?: number;
};

/** A paging source's resume position, kept between runs (shared/sources/cursor.ts keeps it in Redis). */
export type SourceCursor = { read(): Promise<number | null>; write(position: number): Promise<void> };

export interface SourceAdapter {
  name: SourceName;
  /** Requests allowed per window against the real upstream (docs/design.md §9), used as the default budget. */
  defaultBudget: { requests: number; windowSeconds: number };
  /** Default schedule against the real upstream, in seconds. */
  defaultIntervalSeconds: number;
  /** Whether the adapter reads a given list of names (steam) rather than the whole market at once. */
  needsNames: boolean;
  /**
   * For a source that reads names and pages (steam, docs/design.md §19): the share of each run's requests spent
   * on pages (search/render, FetchContext.maxPages), the rest on its names (shared/sources/settings.ts).
   */
  searchShare?: number;
  /**
   * Whether one successful fetch lists everything the source has for sale, with no per-row time (docs/design.md
   * §13's marketplaces). A run then confirms every listed price at once (price_sources.listed_at) and
   * marks only the rows that left the listing, instead of rewriting every row's source_time.
   */
  listsWholeMarket: boolean;
  /**
   * The currency the upstream prices in when it is not USD (docs/design.md §14: skinbaron, EUR): its prices are
   * stored in USD at the newest stored rates, the original kept beside them, and a run without rates
   * fails (the source turns stale) rather than store EUR as USD. Absent: USD.
   */
  priceCurrency?: 'EUR';
  /**
   * The variable holding a key without which the source cannot run at all (docs/design.md §14: skinbaron's
   * SOURCE_SKINBARON_KEY). Named in SOURCES without it, the source is not enabled and /v2/status says
   * why (shared/sources/settings.ts enabledSources).
   */
  requiredKey?: 'SOURCE_SKINBARON_KEY';
  fetchSnapshot(context: FetchContext): Promise<SourceFetchResult>;
}
