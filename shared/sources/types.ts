import type { Logger } from '../logger.ts';

/** The source names this deployment knows (DESIGN 9); `SOURCES` enables a subset. */
export const SOURCE_NAMES = ['skinport', 'steam', 'csfloat'] as const;
export type SourceName = (typeof SOURCE_NAMES)[number];

/** One normalised upstream price: decimal strings only, never JS numbers (DESIGN 3). */
export type SourceObservation = {
  market_hash_name: string;
  /** `default` or a phase version (`phase-2`, `ruby`, …), see shared/catalog/identity.ts. */
  version: string;
  /** The lowest ask (skinport min_price, steam lowest_price, csfloat cheapest listing), e.g. "2.30". */
  price: string;
  median_price: string | null;
  quantity: number | null;
  /** When the upstream says the price was observed (or the fetch time when it says nothing). */
  source_time: Date;
};

export type SourceFetchResult = {
  observations: SourceObservation[];
  /** Rows present upstream but malformed (missing/invalid fields): counted, never fatal. */
  skipped: number;
  /** HTTP requests made. */
  requests: number;
};

/** Thrown when the upstream refuses for now (429, or our own request budget is spent). */
export class SourceRateLimitedError extends Error {
  constructor(
    readonly source: SourceName,
    readonly retryAfterMs: number,
  ) {
    super(`${source} is rate-limited for ${Math.ceil(retryAfterMs / 1000)} s`);
  }
}

/** Thrown for upstream failures (5xx, timeouts, unparseable bodies). */
export class SourceUnavailableError extends Error {
  constructor(
    readonly source: SourceName,
    message: string,
  ) {
    super(`${source}: ${message}`);
  }
}

export type FetchContext = {
  baseUrl: string;
  log: Logger;
  /** Per-request timeout. */
  timeoutMs: number;
  /** Called before every HTTP request; throws SourceRateLimitedError when the budget is spent. */
  acquire: () => Promise<void>;
  /** Market hash names to ask for, for sources that price one item per request (steam). */
  names: string[];
  now: () => Date;
};

export interface SourceAdapter {
  name: SourceName;
  /** Requests allowed per window against the real upstream (DESIGN 9), used as the default budget. */
  defaultBudget: { requests: number; windowSeconds: number };
  /** Default schedule against the real upstream, in seconds. */
  defaultIntervalSeconds: number;
  /** Whether the adapter prices a given list of names (steam) rather than the whole market at once. */
  needsNames: boolean;
  fetchSnapshot(context: FetchContext): Promise<SourceFetchResult>;
}
