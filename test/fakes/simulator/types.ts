/** The market simulator's public names and option types (server.ts re-exports them). */
import { SOURCE_NAMES, type SourceName } from '../../../shared/platform/source-names.ts';
import type { Market } from './market.ts';
import type { NewSimulatorItem } from './new-items.ts';

export const SIMULATED_SOURCES = SOURCE_NAMES;
export type SimulatedSource = SourceName;
/** What /_control switches: every price source and the exchange-rate file. */
export const SIMULATOR_TARGETS = [...SOURCE_NAMES, 'fx'] as const;
export type SimulatorTarget = (typeof SIMULATOR_TARGETS)[number];
/** The six marketplaces of docs/design.md §13. */
export const MARKETPLACE_SOURCES = ['csmarket', 'lisskins', 'waxpeer', 'whitemarket', 'bitskins', 'csdeals'] as const satisfies readonly SourceName[];
export type MarketplaceSource = (typeof MARKETPLACE_SOURCES)[number];
/** The sources whose one body lists the whole market from the shared marketplace model: docs/design.md §13's six and skinbaron (docs/design.md §14). */
export const BODY_SOURCES = [...MARKETPLACE_SOURCES, 'skinbaron'] as const satisfies readonly SourceName[];
export type BodySource = (typeof BODY_SOURCES)[number];
export const SIMULATOR_MODES = ['ok', 'fail', 'stall', 'rate_limit', 'malformed', 'partial', 'wrong_types'] as const;
export type SimulatorMode = (typeof SIMULATOR_MODES)[number];

/** Share of the catalog's priced variants each marketplace has nothing for sale for (left out of its body). */
export const ABSENT_SHARE: Record<BodySource, number> = {
  csmarket: 0.15,
  lisskins: 0.25,
  waxpeer: 0.3,
  whitemarket: 0.45,
  bitskins: 0.35,
  csdeals: 0.5,
  skinbaron: 0.4,
};

export type SimulatorItem = {
  market_hash_name: string;
  /** Phase versions (`phase-2`, `ruby`, …) or upstream labels ("Phase 2", "Ruby"). */
  phases: readonly string[];
  definition_index?: number | null;
  paint_index?: number | null;
  stattrak?: boolean;
  souvenir?: boolean;
};

/**
 * A price pinned for one (name, version) in every source, replacing the generated one. A string is
 * the price itself (a decimal with at most two decimals: "7", "12.5", "0.07"), written verbatim by
 * skinport, steam, lisskins, whitemarket and csdeals; csfloat lists it in cents, waxpeer and bitskins
 * in thousandths (2300), csmarket with three decimals ("2.300"). A pinned variant is listed in every
 * source (no absent share) unless its price is null, its quantity 0 or its `sources` entry null.
 */
export type FixedPrice =
  | string
  | {
      /** Lowest ask; null (or quantity 0) means nothing for sale. */
      price: string | null;
      median_price?: string | null;
      /**
       * Skinport quantity, steam volume, csfloat listing count, lisskins `count`, waxpeer `count` (and
       * the listings of a phase on its dopplers endpoint, at most 50), whitemarket
       * `market_product_count`, bitskins `quantity` (default: generated, at least 1).
       */
      quantity?: number;
      /** csfloat only: the listing prices themselves (overrides price and quantity there). */
      listings?: readonly string[];
      /**
       * csmarket only: the highest `buy_order` over the name's keys, written verbatim (at most three
       * decimals); null: no key has a buy order. Default: generated, a little below the ask.
       */
      bid?: string | null;
      /** csmarket only: the sum of `popularity_7d` over the name's keys (split evenly); null: every key null. */
      volume_7d?: number | null;
      /**
       * The ask in one source instead of `price` (null: not listed there), e.g. an outlier in one venue.
       * Same text rules as `price`; the six marketplaces also take three decimals ("12.345").
       */
      sources?: Partial<Record<SourceName, string | null>>;
    };

export type MarketSimulatorOptions = {
  items: readonly SimulatorItem[];
  /** 0 (default) = a free port. */
  port?: number;
  hostname?: string;
  seed?: number;
  now?: () => Date;
  /** Fixed prices by market_hash_name, then version (`default`, `phase-2`, …). */
  prices?: Record<string, Record<string, FixedPrice>>;
  /** Length of a price bucket (default 30 s). */
  bucketSeconds?: number;
  /** docs/design.md §19: items off the market until their time (test/fakes/simulator/new-items.ts). */
  newItems?: readonly NewSimulatorItem[];
};

export type MarketSimulator = {
  url: string;
  port: number;
  setMode(source: SimulatorTarget | 'all', mode: SimulatorMode): void;
  mode(source: SimulatorTarget): SimulatorMode;
  /** The Retry-After header sent with 429s (default "30"); null sends none. */
  setRetryAfter(value: string | null): void;
  /** Requests received per source since start (any mode). */
  requestCount(source: SimulatorTarget): number;
  /** The last request a source received: its URL and headers. */
  lastRequest(source: SimulatorTarget): { url: string; headers: Record<string, string> } | undefined;
  /** The new items (options.newItems) on the market at `now`. */
  newItemsAt(now: Date): NewSimulatorItem[];
  stop(): Promise<void>;
};

/** What one path answers: a source's endpoint (waxpeer and skinport have two). */
export type Endpoint = SimulatorTarget | 'waxpeer-dopplers' | 'skinport-sales';

/** What every upstream's handler reads: the market, and the modes /_control sets. */
export type SimulatorState = {
  market: Market;
  modes: Record<SimulatorTarget, SimulatorMode>;
  /** Steam priceoverview requests since steam's mode was last set (its partial mode breaks every third). */
  steamPartialCounter: number;
  /** The marketplace bodies built so far (marketplaces.ts), in the order first built: GET /_control shows them. */
  bodies: Map<string, CachedBody>;
};

/** One marketplace body, built once per (bucket, mode), kept gzipped; its size and build times. */
export type CachedBody = { bucket: number; mode: SimulatorMode; gzip: Uint8Array<ArrayBuffer>; bytes: number; ms: number; gzipMs: number };

/** An upstream's handler: the request, its URL, the endpoint and the path it was routed by. */
export type Handler = (request: Request, url: URL, endpoint: Endpoint, path: string) => Response | Promise<Response>;

/** One upstream the simulator speaks: its paths, its bodies for the failing modes, its handler. */
export type Upstream = {
  source: SimulatorTarget;
  /** Paths (without a trailing slash) and the endpoint each answers. */
  routes: Readonly<Record<string, Endpoint>>;
  /** Skinbaron's one endpoint is a POST; every other upstream's a GET. */
  method?: 'GET' | 'POST';
  /** The `malformed` mode's body for each endpoint: the upstream's format cut short. */
  malformed: Readonly<Partial<Record<Endpoint, string>>>;
  /** Content type of the `malformed` body (default JSON). */
  malformedContentType?: string;
  /** The `rate_limit` mode's 429 body, as the upstream writes it. */
  rateLimited: string;
  /** The handler of one simulator (made at its start) for the `ok`, `partial` and `wrong_types` modes. */
  create(state: SimulatorState): Handler;
};
