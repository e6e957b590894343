import zlib from 'node:zlib';
import type { Server } from 'bun';
import { centsFromDecimal, withThousands } from '../../shared/sources/money.ts';
import { SOURCE_NAMES, type SourceName } from '../../shared/platform/source-names.ts';
import { mulberry32 } from '../../shared/util/random.ts';
import { skinportSalesChunks } from './simulator/skinport-sales.ts';
import { PHASE_LABELS as CATALOG_PHASE_LABELS } from '../../shared/catalog/identity.ts';
import { otherSteamCurrency, steamInOtherCurrency } from './simulator/steam-currencies.ts';
import { createSteamSearch } from './simulator/steam-search.ts';
import { newItemSchedule, type NewSimulatorItem } from './simulator/new-items.ts';

/**
 * Local market simulator (DESIGN 9, 13 and 14, test/fakes/): one Bun.serve speaking the ten upstream
 * formats the adapters read, over a given item list, so tests and `npm start` run with no internet.
 * Each source lives under a path prefix equal to its name (an adapter's base URL is `<url>/<source>`):
 *
 *   /skinport/v1/items?app_id=730&currency=USD     bare array, one row per (name, version), brotli
 *   /skinport/v1/sales/history?app_id=730&currency=USD  bare array of sales windows (test/fakes/simulator/skinport-sales.ts), brotli
 *   /steam/market/priceoverview/?appid=730&currency=1&market_hash_name=…  (any other wallet currency id: the same answer in that currency's money, test/fakes/simulator/steam-currencies.ts)
 *   /steam/market/search/render/?appid=730&norender=1&start=…&count=…  {success, start, pagesize, total_count, results:[{hash_name, sell_listings, sell_price, asset_description:{icon_url, …}, …}]}, by name, count ≤ 100
 *   /csfloat/api/v1/listings?limit=…&cursor=…      {data, cursor}, integer cents, limit ≤ 1000
 *   /csmarket/api/v2/prices/class_instance/USD.json  {success, time, currency, items:{"<classid>_<instanceid>":…}}
 *   /lisskins/market_export_json/csgo.json           bare array [{name, price, unlocked_price, count, url}]
 *   /waxpeer/v1/prices?game=csgo&minified=0          {success, items:[{name, count, min, steam_price?, img?, type?, rarity_color?}]}
 *   /waxpeer/v1/prices/dopplers?game=csgo&phase=any  {success, items:[{name, phase, price, paint_index, item_id, float?}]}, one per listing
 *   /whitemarket/export/v1/prices/730.json           bare array [{market_hash_name, price, market_product_link, market_product_count}]
 *   /bitskins/market/insell/730                      {list:[{skin_id, name, price_min, price_max, price_avg, quantity}]}
 *   /csdeals/API/IPricing/GetLowestPrices/v1?appid=730  {success, response:{items:[{marketname, lowest_price}]}}
 *   POST /skinbaron/GetExtendedPriceList            bare array [{marketHashName, lowestPrice, minWear, maxWear, imageUrl, dopplerClassName}], EUR
 *   /fx/stats/eurofxref/eurofxref-daily.xml          the ECB's daily reference rates (DESIGN 14), `gesmes:Envelope` XML
 *   POST /_control/<source|fx|all>/<mode>          switch a source's mode from another process
 *   (options.newItems: items off the market until their time, test/fakes/simulator/new-items.ts)
 *   GET  /_control                                 current modes
 *
 * Prices are deterministic in (seed, name, version, 30 s bucket of `now`) and drift slowly: each
 * price is a base (log-uniform within a range by item kind, times exterior / StatTrak / Souvenir /
 * phase multipliers) times exp(value noise at several time scales), so neighbouring buckets differ
 * by a fraction of a percent while hours and days move several percent. Only about one price in ten
 * moves per bucket in each source (changeBucket); a row that did not move is written exactly as before.
 *
 * Every source shares that market and adds its own level and a little noise of its own: a level
 * (SOURCE_LEVEL: skinport 0.93, steam 1.12, csfloat 0.96, csmarket 0.97, lisskins 0.91, waxpeer 0.95,
 * whitemarket 0.94, bitskins 0.98, csdeals 1.02, skinbaron 0.96 of the common price) and its own drift at 0.3 times
 * the common amplitude (at most about ±3.5 %). The six marketplaces (and skinbaron) also carry a fixed per-item bias
 * of up to ±4 % (log-uniform), so on a given item they disagree by a few percent, as real venues do.
 *
 * Coverage: skinport, steam and csfloat list what they list today (skinport ~6 % of variants
 * unlisted, csfloat half). The six marketplaces list only what is for sale, and each has nothing
 * for a fixed, seeded share of the catalog's variants (ABSENT_SHARE): csmarket 15 %, lisskins 25 %,
 * waxpeer 30 %, whitemarket 45 %, bitskins 35 %, csdeals 50 %, skinbaron 40 %; those are left out of the body. The
 * share applies per priced variant (a phase for Doppler items): a Doppler name is listed when at
 * least one of its phases is, at the lowest of them. Pinned prices (options.prices) are always listed.
 *
 * Money is written as each upstream writes it, exactly (never through a float):
 *   skinport   JSON numbers, two decimals as literal text (`2.30`); a pin verbatim (`0.7`)
 *   steam      `"$1,234.56"`;  csfloat integer cents
 *   csmarket   `price` a string with exactly three decimals (`"2.300"`, `"32.393"`); `buy_order` and
 *              `avg_price` strings with trailing zeros trimmed (`"30.1"`), a pinned bid verbatim;
 *              `popularity_7d` an integer string. One name under 1 key (~80 %), 2 (~15 %) or 3 (~5 %),
 *              its ask (lowest `price`) on one of them in any position, the others dearer by 1–16 %.
 *              Only csmarket has buy orders: ~30 % of names have none (every key null); otherwise the
 *              highest, 82–97 % of the ask, sits on one key and the others are lower or null.
 *              `popularity_7d` is null on ~25 % of keys; `avg_price` null on ~20 %.
 *   lisskins   JSON numbers, two decimals (`12.30`), a pin verbatim; `unlocked_price` null (~25 %),
 *              equal to `price` (~50 %) or 1–11 % above it (a pin: equal to it)
 *   waxpeer    integer thousandths of USD (`2300`, generated ones to the thousandth: `937999`);
 *              plain rows carry a Doppler name once (its lowest phase, count = all its listings);
 *              `steam_price` missing on ~10 % of rows; the dopplers endpoint lists every listing of
 *              every phase (the cheapest at the phase's ask, the others dearer)
 *   whitemarket  even rows a string (`"2.30"`), odd rows a JSON number (`2.30`); a pin verbatim
 *   bitskins   integer thousandths of whole cents (`2300`); Doppler items only as phase names
 *              (`★ Karambit | Doppler Ruby (Factory New)`, `… | Gamma Doppler Phase 3 (…)`), never plain
 *   csdeals    strings with two decimals (`"2.30"`), a pin verbatim
 *   skinbaron  EUR (DESIGN 14): JSON numbers with two decimals (`27.95`), the USD ask divided by the
 *              USD rate of the ECB file this simulator serves for that day (so converted back it
 *              roughly agrees with the others), rounded to the euro cent; a `price` pin is converted
 *              the same way, a `sources.skinbaron` pin is EUR already and written verbatim. A Doppler
 *              name has its plain row (`dopplerClassName` null, its lowest phase) and one row per
 *              listed phase with an undocumented `dopplerClassName` (`"phase2"`, `"ruby"`, …). The
 *              request must be a POST with `x-requested-with: XMLHttpRequest` and a JSON body
 *              `{apikey, appId: 730}`; any non-empty key is accepted (401 without one, 400 otherwise).
 * Only waxpeer's dopplers endpoint and bitskins' names carry phases; the other marketplaces write the
 * plain name (the `default` version). The six marketplace bodies are built once per bucket and mode
 * and served from that cache, gzipped to clients that accept it (skinport: brotli, once per bucket in `ok`).
 * GET /_control shows each cached body's size and build time.
 *
 * Modes per source: ok, fail (500), stall (never answers until stop or the client gives up),
 * rate_limit (429 + Retry-After, steam's body `null`), malformed (truncated, invalid JSON), partial
 * (valid JSON where every third row, index % 3 === 1, is broken in turn: missing name, price of the
 * wrong type, negative price; for steam, every third request since the mode was set; for csmarket a
 * row is one key of `items`, for waxpeer each endpoint counts its own rows), wrong_types (valid JSON,
 * right envelope, but in every row each price field has a type the format never uses: an object
 * `{"amount":…}` on even rows and `true` on odd rows, and counts are strings (`"quantity":"3"`;
 * steam's `volume` a number, csmarket's `popularity_7d` an object); names are kept, so an adapter
 * sees only malformed rows). The "wrong type" of partial is one no reading accepts: an object
 * `{"amount":…}` where the upstream writes a string or a number (DESIGN 13 lets adapters take either),
 * a string for skinport and csfloat (which only write numbers) and a number for steam.
 * A mode applies to every endpoint of its source (both of waxpeer's).
 *
 * Exchange rates (`fx`, DESIGN 14): the ECB daily file for the latest working day (Monday to Friday,
 * UTC) at or before `now`, with the real file's ~30 currencies in its order, each rate written with
 * the ECB's own number of decimals. Rates are deterministic in (seed, currency, day) and drift
 * slowly: value noise over days (about 0.3 % from one day to the next, a few % over weeks); BGN is
 * pegged (1.9558 every day) and DKK moves within 0.1 %. Its modes: ok, fail (500 HTML page), stall,
 * rate_limit (429), malformed (the file cut short), partial (every third rate entry, index % 3 === 1,
 * broken in turn: a lower-case code, a non-numeric rate, a negative rate; USD, the first, is always
 * good), wrong_types (a well-formed envelope whose rates use a decimal comma, `1,0834`: none is usable).
 */

export const SIMULATED_SOURCES = SOURCE_NAMES;
export type SimulatedSource = SourceName;
/** What /_control switches: every price source and the exchange-rate file. */
export const SIMULATOR_TARGETS = [...SOURCE_NAMES, 'fx'] as const;
export type SimulatorTarget = (typeof SIMULATOR_TARGETS)[number];
/** The six marketplaces of DESIGN 13. */
export const MARKETPLACE_SOURCES = ['csmarket', 'lisskins', 'waxpeer', 'whitemarket', 'bitskins', 'csdeals'] as const satisfies readonly SourceName[];
export type MarketplaceSource = (typeof MARKETPLACE_SOURCES)[number];
/** The sources whose one body lists the whole market from the shared marketplace model: DESIGN 13's six and skinbaron (DESIGN 14). */
const BODY_SOURCES = [...MARKETPLACE_SOURCES, 'skinbaron'] as const satisfies readonly SourceName[];
type BodySource = (typeof BODY_SOURCES)[number];
export const SIMULATOR_MODES = ['ok', 'fail', 'stall', 'rate_limit', 'malformed', 'partial', 'wrong_types'] as const;
export type SimulatorMode = (typeof SIMULATOR_MODES)[number];

/** Share of the catalog's priced variants each marketplace has nothing for sale for (left out of its body). */
export const ABSENT_SHARE: Record<BodySource, number> = { csmarket: 0.15, lisskins: 0.25, waxpeer: 0.3, whitemarket: 0.45, bitskins: 0.35, csdeals: 0.5, skinbaron: 0.4 };

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
  /** DESIGN 19: items off the market until their time (test/fakes/simulator/new-items.ts). */
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

// ---------------------------------------------------------------------------------------------
// Deterministic hashing and noise

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

function hashString(text: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < text.length; i += 1) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return fmix(h);
}

function mix(...values: number[]): number {
  let h = 0x9e3779b9;
  for (const value of values) h = fmix((Math.imul(h ^ (value >>> 0), 0x165667b1) + 0x27d4eb2d) >>> 0);
  return h;
}

/** [0, 1) from a hash. */
const unit = (h: number) => h / 4294967296;

/** Value noise: smooth interpolation between random values at each multiple of `scale` buckets. */
function valueNoise(h: number, octave: number, bucket: number, scale: number): number {
  const cell = Math.floor(bucket / scale);
  const t = (bucket - cell * scale) / scale;
  const smooth = t * t * (3 - 2 * t);
  const a = unit(mix(h, octave, cell)) * 2 - 1;
  const b = unit(mix(h, octave, cell + 1)) * 2 - 1;
  return a + (b - a) * smooth;
}

// Scales in buckets (30 s: 30 s, 4 min, 32 min, ~4 h, ~34 h) and their amplitudes (log-price).
const OCTAVES: [number, number][] = [
  [1, 0.002],
  [8, 0.006],
  [64, 0.015],
  [512, 0.035],
  [4096, 0.06],
];

function drift(h: number, bucket: number, weight = 1): number {
  let sum = 0;
  for (const [index, [scale, amplitude]] of OCTAVES.entries()) sum += valueNoise(h, index, bucket, scale) * amplitude;
  return sum * weight;
}

// ---------------------------------------------------------------------------------------------
// Item model

const PHASE_LABELS: Readonly<Record<string, string>> = CATALOG_PHASE_LABELS;
const PHASE_MULTIPLIERS: Record<string, number> = {
  'phase-1': 0.9,
  'phase-2': 1.3,
  'phase-3': 0.85,
  'phase-4': 1.2,
  ruby: 6,
  sapphire: 7,
  'black-pearl': 3.5,
  emerald: 9,
};
const EXTERIORS: Record<string, { multiplier: number; wear: [number, number] }> = {
  'Factory New': { multiplier: 1.7, wear: [0, 0.07] },
  'Minimal Wear': { multiplier: 1.25, wear: [0.07, 0.15] },
  'Field-Tested': { multiplier: 1, wear: [0.15, 0.38] },
  'Well-Worn': { multiplier: 0.85, wear: [0.38, 0.45] },
  'Battle-Scarred': { multiplier: 0.75, wear: [0.45, 1] },
};
const SOURCE_LEVEL: Record<SimulatedSource, number> = {
  skinport: 0.93,
  steam: 1.12,
  csfloat: 0.96,
  csmarket: 0.97,
  lisskins: 0.91,
  waxpeer: 0.95,
  whitemarket: 0.94,
  bitskins: 0.98,
  csdeals: 1.02,
  skinbaron: 0.96,
};
const SOURCE_SALT: Record<SimulatedSource, number> = {
  skinport: 0x51,
  steam: 0x5e,
  csfloat: 0xcf,
  csmarket: 0xc3,
  lisskins: 0x11,
  waxpeer: 0x3a,
  whitemarket: 0x3e,
  bitskins: 0xb5,
  csdeals: 0xcd,
  skinbaron: 0x5b,
};

function phaseVersion(phase: string): string {
  const normalised = phase.trim().toLowerCase().replace(/\s+/g, '-');
  if (!(normalised in PHASE_LABELS)) throw new Error(`simulator: unknown phase ${phase}`);
  return normalised;
}

function exteriorOf(name: string): string | null {
  const match = /\(([^()]+)\)\s*$/.exec(name);
  return match && match[1]! in EXTERIORS ? match[1]! : null;
}

/** A plausible USD level for an item, by kind (from its market_hash_name), before drift. */
function basePrice(name: string, h: number, version: string): number {
  const u = unit(h);
  const logUniform = (lo: number, hi: number, skew: number) => lo * Math.pow(hi / lo, Math.pow(u, skew));
  const exterior = exteriorOf(name);
  let base: number;
  if (name.startsWith('★') && /Gloves|Wraps/.test(name)) base = logUniform(70, 3000, 1.4);
  else if (name.startsWith('★')) base = logUniform(60, 1500, 1.4);
  else if (name.startsWith('Sticker |')) base = logUniform(0.03, 40, 2.4);
  else if (name.startsWith('Patch |')) base = logUniform(0.3, 8, 1.6);
  else if (name.startsWith('Charm |')) base = logUniform(0.3, 20, 1.8);
  else if (/^(Sealed )?Graffiti \|/.test(name)) base = logUniform(0.03, 0.8, 1.6);
  else if (name.includes('Music Kit |')) base = logUniform(2, 15, 1.2);
  else if (/ Key$/.test(name)) base = logUniform(2.3, 2.7, 1);
  else if (/(Case|Capsule|Package|Package \(.*\)|Box)$/.test(name)) base = logUniform(0.05, 12, 2.2);
  else if (exterior) base = logUniform(0.03, 150, 1.8);
  else base = logUniform(0.5, 40, 1.5);
  if (exterior) base *= EXTERIORS[exterior]!.multiplier;
  if (name.includes('StatTrak™')) base *= 2.2;
  if (name.startsWith('Souvenir ') && exterior) base *= 2.5;
  if (version !== 'default') base *= PHASE_MULTIPLIERS[version] ?? 1;
  return base;
}

/** A pinned ask in one source: its text as given, in thousandths, and in cents (null with three decimals). */
type Pin = { text: string; mills: number; cents: number | null };

type Fixed = {
  price: string | null;
  priceCents: number | null;
  median: string | null | undefined;
  quantity: number | undefined;
  listings: number[] | undefined;
  bid: Pin | null | undefined;
  volume7d: number | null | undefined;
  sources: Partial<Record<SimulatedSource, Pin | null>>;
};

type Entry = {
  item: SimulatorItem;
  name: string;
  /** JSON.stringify(name), computed once (every body writes it). */
  nameJson: string;
  /** Position of the item in options.items (unique csmarket class ids, bitskins skin ids). */
  ordinal: number;
  /** Index among all entries (defaults and phases): the marketplaces' memo slot. */
  id: number;
  version: string;
  /** Upstream phase label, null for `default`. */
  label: string | null;
  hash: number;
  base: number;
  fixed: Fixed | undefined;
  /** For the default entry of an item with phases: its phase entries (its price is their minimum). */
  phaseEntries: Entry[];
};

/** "2.3" → 2300, "12.345" → 12345; null unless a decimal with at most three places. */
function millsFromDecimal(decimal: string): number | null {
  const match = /^([0-9]+)(?:\.([0-9]{1,3}))?$/.exec(decimal);
  if (!match) return null;
  const mills = Number(`${match[1]}${(match[2] ?? '').padEnd(3, '0')}`);
  return Number.isSafeInteger(mills) ? mills : null;
}

function normaliseFixed(name: string, version: string, value: FixedPrice): Fixed {
  const spec = typeof value === 'string' ? { price: value } : value;
  const cents = (decimal: string) => {
    const parsed = centsFromDecimal(decimal);
    if (parsed === null || parsed === 0) throw new Error(`simulator: fixed price ${decimal} for ${name} ${version} must be positive with at most two decimals`);
    return parsed;
  };
  const pin = (decimal: string, source: SimulatedSource | 'bid'): Pin => {
    const centsSource = source === 'skinport' || source === 'steam' || source === 'csfloat';
    const mills = millsFromDecimal(decimal);
    if (mills === null || mills === 0 || (centsSource && mills % 10 !== 0) || (centsSource && centsFromDecimal(decimal) === null)) {
      throw new Error(`simulator: fixed ${source} price ${decimal} for ${name} ${version} must be positive with at most ${centsSource ? 'two' : 'three'} decimals`);
    }
    return { text: decimal, mills, cents: centsFromDecimal(decimal) };
  };
  const sources: Fixed['sources'] = {};
  for (const [source, price] of Object.entries(spec.sources ?? {}) as [SimulatedSource, string | null][]) {
    if (!(SOURCE_NAMES as readonly string[]).includes(source)) throw new Error(`simulator: unknown source ${source} in the fixed price of ${name} ${version}`);
    sources[source] = price === null ? null : pin(price, source);
  }
  return {
    price: spec.price,
    priceCents: spec.price === null ? null : cents(spec.price),
    median: spec.median_price,
    quantity: spec.quantity,
    listings: spec.listings?.map(cents),
    bid: spec.bid === undefined || spec.bid === null ? spec.bid : pin(spec.bid, 'bid'),
    volume7d: spec.volume_7d,
    sources,
  };
}

/** The pinned ask of an entry in a source, or null when the pin says nothing is for sale there. */
function pinFor(fixed: Fixed, source: SimulatedSource): Pin | null {
  if (fixed.quantity === 0) return null;
  const override = fixed.sources[source];
  if (override !== undefined) return override;
  return fixed.price === null ? null : { text: fixed.price, mills: fixed.priceCents! * 10, cents: fixed.priceCents };
}

/** A price as both exact text and cents. */
type Quote = { text: string; cents: number };

function quoteFromCents(cents: number): Quote {
  const whole = Math.floor(cents / 100);
  return { text: `${whole}.${String(cents % 100).padStart(2, '0')}`, cents };
}

/**
 * The `wrong_types` mode's value for a field whose right JSON text is `text`: an object wrapping it on
 * even rows, `true` on odd rows (types no upstream format uses for money).
 */
function wrongType(text: string, index: number): string {
  return index % 2 === 0 ? `{"amount":${text}}` : 'true';
}

function steamMoney(decimal: string): string {
  const [whole = '0', fraction] = decimal.split('.');
  return `$${withThousands(whole)}${fraction === undefined ? '' : `.${fraction}`}`;
}

/**
 * A JSON body written row by row straight into bytes (Bun.ArrayBufferSink): twice as fast as joining
 * tens of thousands of row strings and encoding the result, and no second copy of the body as a string.
 */
class BodyWriter {
  private readonly sink = new Bun.ArrayBufferSink();
  /** Rows written so far (the index of the next one). */
  count = 0;

  constructor(head: string, capacity: number) {
    this.sink.start({ highWaterMark: capacity, asUint8Array: true });
    this.sink.write(head);
  }

  row(text: string): void {
    if (this.count > 0) this.sink.write(',');
    this.sink.write(text);
    this.count += 1;
  }

  end(tail: string): Uint8Array<ArrayBuffer> {
    this.sink.write(tail);
    return this.sink.end() as Uint8Array<ArrayBuffer>;
  }
}

// ---------------------------------------------------------------------------------------------
// Exchange rates: the ECB daily reference rates file

const ECB_HEAD =
  '<?xml version="1.0" encoding="UTF-8"?>\n' +
  '<gesmes:Envelope xmlns:gesmes="http://www.gesmes.org/xml/2002-08-01" xmlns="http://www.ecb.int/vocabulary/2002-08-01/eurofxref">\n' +
  '\t<gesmes:subject>Reference rates</gesmes:subject>\n' +
  '\t<gesmes:Sender>\n\t\t<gesmes:name>European Central Bank</gesmes:name>\n\t</gesmes:Sender>\n';

/**
 * The real file's currencies in its order: a level (units per EUR, late 2026), the decimals the ECB
 * writes it with, and how much it moves (1 = the common amplitude; BGN is pegged, DKK nearly so).
 */
const ECB_CURRENCIES: readonly [code: string, level: number, decimals: number, volatility: number][] = [
  ['USD', 1.0834, 4, 1], ['JPY', 162.35, 2, 1], ['BGN', 1.9558, 4, 0], ['CZK', 25.112, 3, 0.5],
  ['DKK', 7.4598, 4, 0.02], ['GBP', 0.84315, 5, 0.6], ['HUF', 405.18, 2, 1], ['PLN', 4.2735, 4, 0.6],
  ['RON', 4.9762, 4, 0.3], ['SEK', 11.4565, 4, 0.8], ['CHF', 0.9381, 4, 0.6], ['ISK', 149.9, 2, 0.8],
  ['NOK', 11.7035, 4, 0.8], ['TRY', 37.4818, 4, 1.5], ['AUD', 1.6402, 4, 1], ['BRL', 6.2561, 4, 1.4],
  ['CAD', 1.5121, 4, 0.9], ['CNY', 7.8012, 4, 0.9], ['HKD', 8.4237, 4, 1], ['IDR', 17132.45, 2, 1.1],
  ['ILS', 4.0031, 4, 1], ['INR', 91.0125, 4, 1], ['KRW', 1509.62, 2, 1.1], ['MXN', 21.4278, 4, 1.4],
  ['MYR', 4.8045, 4, 1], ['NZD', 1.8032, 4, 1], ['PHP', 62.523, 3, 1], ['SGD', 1.4311, 4, 0.7],
  ['THB', 37.821, 3, 1], ['ZAR', 19.7164, 4, 1.3],
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
function ecbUsdRate(seed: number, now: Date): { units: number; decimals: number } {
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

// ---------------------------------------------------------------------------------------------

export function startMarketSimulator(options: MarketSimulatorOptions): MarketSimulator {
  const seed = (options.seed ?? 1) >>> 0;
  const now = options.now ?? (() => new Date());
  const bucketMs = (options.bucketSeconds ?? 30) * 1000;
  const modes = Object.fromEntries(SIMULATOR_TARGETS.map((source) => [source, 'ok'])) as Record<SimulatorTarget, SimulatorMode>;
  const counts = Object.fromEntries(SIMULATOR_TARGETS.map((source) => [source, 0])) as Record<SimulatorTarget, number>;
  const last: Partial<Record<SimulatorTarget, { url: string; headers: Record<string, string> }>> = {};
  let retryAfter: string | null = '30';
  let steamPartialCounter = 0;
  const stalled = new Set<(response: Response) => void>();

  // Entries: every item's default, plus one per phase.
  const defaults: Entry[] = [];
  const byName = new Map<string, Entry>();
  const csfloatEntries: Entry[] = [];
  let entryCount = 0;
  const newItems = newItemSchedule(options.newItems, Math.floor(now().getTime() / bucketMs), bucketMs);
  for (const [ordinal, item] of [...options.items, ...newItems.items].entries()) {
    const name = item.market_hash_name;
    const nameJson = JSON.stringify(name);
    const fixedFor = (version: string) => {
      const value = options.prices?.[name]?.[version];
      return value === undefined ? undefined : normaliseFixed(name, version, value);
    };
    const makeEntry = (version: string): Entry => {
      const hash = hashString(`${name}\u0000${version}`, seed);
      return {
        item,
        name,
        nameJson,
        ordinal,
        id: entryCount++,
        version,
        label: version === 'default' ? null : PHASE_LABELS[version]!,
        hash,
        // The kind's level comes from the name alone, so an item's phases share it.
        base: basePrice(name, hashString(name, seed), version) * (version === 'default' ? 1 : 0.9 + 0.2 * unit(hash)),
        fixed: fixedFor(version),
        phaseEntries: [],
      };
    };
    const main = makeEntry('default');
    main.phaseEntries = [...new Set(item.phases.map(phaseVersion))].map(makeEntry);
    defaults.push(main);
    byName.set(name, main);
    // CSFloat's listings are laid out once: a new item is never in them.
    if (!newItems.isListed(item, -Infinity)) continue;
    // CSFloat listings of a Doppler always carry a phase.
    if (main.phaseEntries.length > 0) csfloatEntries.push(...main.phaseEntries);
    else csfloatEntries.push(main);
  }

  const bucketOf = (at: Date) => Math.floor(at.getTime() / bucketMs);
  const CHANGE_SHARE = 0.1;

  /**
   * The last bucket at or before `bucket` in which this entry's market moved. Like a real market,
   * only some items change in any 30 s (about one in ten per bucket); the rest keep their price and
   * their `updated_at`, so an ingest run writes only what changed.
   */
  function changeBucket(entry: Entry, source: SimulatedSource, bucket: number): number {
    if (entry.phaseEntries.length > 0) return Math.max(...entry.phaseEntries.map((phase) => changeBucket(phase, source, bucket)));
    for (let back = 0; back < 64; back += 1) {
      if (unit(mix(entry.hash, SOURCE_SALT[source], bucket - back, 11)) < CHANGE_SHARE) return bucket - back;
    }
    return bucket - 64;
  }

  /** The lowest ask of an entry in a source at a bucket, or null when nothing is for sale. */
  function ask(entry: Entry, source: SimulatedSource, bucket: number): Quote | null {
    if (entry.fixed) {
      const pin = pinFor(entry.fixed, source);
      return pin ? { text: pin.text, cents: pin.cents! } : null;
    }
    if (entry.phaseEntries.length > 0) {
      let best: Quote | null = null;
      for (const phase of entry.phaseEntries) {
        const quote = ask(phase, source, bucket);
        if (quote && (!best || quote.cents < best.cents)) best = quote;
      }
      return best;
    }
    const moved = changeBucket(entry, source, bucket);
    const level = entry.base * SOURCE_LEVEL[source] * Math.exp(drift(entry.hash, moved) + drift(entry.hash ^ SOURCE_SALT[source], moved, 0.3));
    return quoteFromCents(Math.max(3, Math.round(level * 100)));
  }

  /** Generated listing/volume count; 0 means nothing for sale in that source. */
  function generatedQuantity(entry: Entry, source: SimulatedSource, cents: number): number {
    const u = unit(mix(entry.hash, SOURCE_SALT[source], 7));
    const v = unit(mix(entry.hash, SOURCE_SALT[source], 8));
    // CSFloat is the thinnest market: half the variants have no listing at all.
    const zeroShare = source === 'skinport' ? 0.06 : source === 'steam' ? 0.02 : 0.5;
    if (u < zeroShare) return 0;
    const cap = cents < 100 ? 3000 : cents < 1000 ? 800 : cents < 10_000 ? 150 : cents < 100_000 ? 30 : 6;
    return source === 'csfloat' ? 1 + Math.floor(v * v * 5) : 1 + Math.floor(v * v * v * cap);
  }

  // ---- skinport ------------------------------------------------------------------------------

  const CREATED_EPOCH = 1_535_988_253;
  const slug = (text: string) =>
    text
      .toLowerCase()
      .replace(/[™★|()]/g, ' ')
      .trim()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '');

  function skinportRow(entry: Entry, bucket: number, index: number, corrupt: boolean, wrongTypes = false): string {
    const quote = ask(entry, 'skinport', bucket);
    let quantity: number;
    let min: string | null = null;
    let max: string | null = null;
    let mean: string | null = null;
    let median: string | null = null;
    let suggested: string;
    const moved = entry.fixed ? bucket : changeBucket(entry, 'skinport', bucket);
    const h = mix(entry.hash, moved);
    if (entry.fixed) {
      quantity = quote ? Math.max(1, entry.fixed.quantity ?? 1 + (entry.hash % 50)) : 0;
      suggested = quote?.text ?? entry.fixed.median ?? '1.00';
      if (quote) {
        min = max = mean = quote.text;
        median = entry.fixed.median === undefined ? quote.text : entry.fixed.median;
      }
    } else {
      const cents = quote?.cents ?? 100;
      quantity = quote ? generatedQuantity(entry, 'skinport', cents) : 0;
      suggested = quoteFromCents(Math.round(cents * (1.05 + 0.2 * unit(mix(h, 4))))).text;
      if (quote && quantity > 0) {
        min = quote.text;
        if (quantity === 1) max = mean = median = quote.text;
        else {
          const medianCents = Math.round(cents * (1.02 + 0.25 * unit(mix(h, 1))));
          const meanCents = Math.round(medianCents * (1 + 0.08 * unit(mix(h, 2))));
          median = quoteFromCents(medianCents).text;
          mean = quoteFromCents(meanCents).text;
          max = quoteFromCents(Math.round(meanCents * (1.2 + 2 * unit(mix(h, 3))))).text;
        }
      }
    }
    let minField = min ?? 'null';
    let nameField = `"market_hash_name":${JSON.stringify(entry.name)},`;
    let quantityField = String(quantity);
    if (wrongTypes) {
      const wrong = (value: string | null) => (value === null ? null : wrongType(value, index));
      [suggested, max, mean, median] = [wrong(suggested)!, wrong(max), wrong(mean), wrong(median)];
      minField = wrong(min) ?? 'null';
      quantityField = `"${quantity}"`;
    }
    if (corrupt) {
      const kind = Math.floor(index / 3) % 3;
      if (kind === 0) nameField = '';
      else if (kind === 1) minField = `"${min ?? '1.00'}"`;
      else minField = `-${min ?? '1.00'}`;
    }
    const itemSlug = slug(entry.name);
    const version = entry.label ? JSON.stringify(entry.label) : 'null';
    return (
      `{${nameField}"version":${version},"currency":"USD","suggested_price":${suggested},` +
      `"item_page":${JSON.stringify(`https://skinport.com/item/${itemSlug}${entry.label ? `-${slug(entry.label)}` : ''}`)},` +
      `"market_page":${JSON.stringify(`https://skinport.com/market?item=${encodeURIComponent(entry.name)}&cat=${encodeURIComponent(entry.item.market_hash_name.split(' | ')[0] ?? '')}`)},` +
      `"min_price":${minField},"max_price":${max ?? 'null'},"mean_price":${mean ?? 'null'},"median_price":${median ?? 'null'},` +
      `"quantity":${quantityField},"created_at":${CREATED_EPOCH + (entry.hash % 150_000_000)},"updated_at":${Math.floor((moved * bucketMs) / 1000)}}`
    );
  }

  let skinportCache: { bucket: number; body: Uint8Array } | undefined;

  function skinportBody(partial: boolean, wrongTypes: boolean): string {
    const bucket = bucketOf(now());
    const rows: string[] = [];
    for (const entry of defaults) {
      if (!newItems.isListed(entry.item, bucket)) continue;
      rows.push(skinportRow(entry, bucket, rows.length, partial && rows.length % 3 === 1, wrongTypes));
      for (const phase of entry.phaseEntries) rows.push(skinportRow(phase, bucket, rows.length, partial && rows.length % 3 === 1, wrongTypes));
    }
    return `[${rows.join(',')}]`;
  }

  function skinport(request: Request, url: URL): Response {
    if (url.searchParams.get('app_id') !== '730' || url.searchParams.get('currency') !== 'USD') {
      return Response.json({ errors: [{ id: 'validation_error', message: 'app_id must be 730 and currency USD in this simulator' }] }, { status: 400 });
    }
    if (!(request.headers.get('accept-encoding') ?? '').includes('br')) {
      return Response.json({ errors: [{ id: 'accept_encoding_required', message: 'Accept-Encoding: br is required' }] }, { status: 406 });
    }
    const partial = modes.skinport === 'partial';
    const wrongTypes = modes.skinport === 'wrong_types';
    const bucket = bucketOf(now());
    let body: Uint8Array;
    if (!partial && !wrongTypes && skinportCache?.bucket === bucket) body = skinportCache.body;
    else {
      body = zlib.brotliCompressSync(Buffer.from(skinportBody(partial, wrongTypes)), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
      if (!partial && !wrongTypes) skinportCache = { bucket, body };
    }
    return new Response(body, { headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'br', 'cache-control': 'public, max-age=300' } });
  }

  /** DESIGN 19: skinport's sales history (test/fakes/simulator/skinport-sales.ts), over what skinport lists, one body per hour and mode. */
  let salesCache: { hour: number; body: Uint8Array } | undefined;
  async function skinportSales(url: URL): Promise<Response> {
    if (url.searchParams.get('app_id') !== '730' || url.searchParams.get('currency') !== 'USD') {
      return Response.json({ errors: [{ id: 'validation_error', message: 'app_id must be 730 and currency USD in this simulator' }] }, { status: 400 });
    }
    const partial = modes.skinport === 'partial';
    const wrongTypes = modes.skinport === 'wrong_types';
    const hour = Math.floor(now().getTime() / 3_600_000);
    let body: Uint8Array;
    if (!partial && !wrongTypes && salesCache?.hour === hour) body = salesCache.body;
    else {
      const bucket = bucketOf(now());
      // New items (options.newItems) only once they are on the market; the body is kept for the hour, as upstream's.
      const entries = defaults.filter((entry) => newItems.isListed(entry.item, bucket)).flatMap((entry) => [entry, ...entry.phaseEntries]);
      // Compressed as it is written, a thousand rows at a time: the whole text is never held (bench:idle).
      const compressor = zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
      const parts: Buffer[] = [];
      compressor.on('data', (chunk: Buffer) => parts.push(chunk));
      const finished = new Promise<void>((resolve, reject) => {
        compressor.on('end', resolve);
        compressor.on('error', reject);
      });
      for (const chunk of skinportSalesChunks(entries, (entry) => ask(entry as Entry, 'skinport', bucket)?.cents ?? null, { hour, partial, wrongTypes, slug })) {
        if (!compressor.write(chunk)) await new Promise((resolve) => compressor.once('drain', resolve));
      }
      compressor.end();
      await finished;
      body = Buffer.concat(parts);
      if (!partial && !wrongTypes) salesCache = { hour, body };
    }
    return new Response(body, { headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'br', 'cache-control': 'public, max-age=3600' } });
  }

  // ---- steam ---------------------------------------------------------------------------------

  function steam(url: URL): Response | Promise<Response> {
    // DESIGN 19: another wallet currency answers the USD answer in its money (test/fakes/simulator/steam-currencies.ts).
    if (otherSteamCurrency(url)) return steamInOtherCurrency(url, steam, seed, now());
    const json = (text: string, status = 200) => new Response(text, { status, headers: { 'content-type': 'application/json; charset=utf-8' } });
    const name = url.searchParams.get('market_hash_name');
    if (url.searchParams.get('appid') !== '730' || url.searchParams.get('currency') !== '1' || !name) return json('{"success":false}', 400);
    const counter = steamPartialCounter;
    steamPartialCounter += 1;
    const entry = byName.get(name);
    if (!entry || !newItems.isListed(entry.item, bucketOf(now()))) return json('{"success":false}');
    if (modes.steam === 'wrong_types') {
      const quote = ask(entry, 'steam', bucketOf(now()));
      const money = quote ? steamMoney(quote.text) : '$1.00';
      return json(`{"success":true,"lowest_price":${wrongType(JSON.stringify(money), counter)},"volume":12,"median_price":${wrongType(JSON.stringify(money), counter)}}`);
    }
    if (modes.steam === 'partial' && counter % 3 === 1) {
      const kind = Math.floor(counter / 3) % 3;
      if (kind === 0) return json('{"lowest_price":"$2.30","volume":"12"}');
      if (kind === 1) return json('{"success":true,"lowest_price":2.3,"volume":"12","median_price":"$2.40"}');
      return json('{"success":true,"lowest_price":"-$2.30","volume":"12","median_price":"$2.40"}');
    }
    const bucket = bucketOf(now());
    const quote = ask(entry, 'steam', bucket);
    const fixed = entry.fixed;
    const fields: string[] = ['"success":true'];
    if (quote) fields.push(`"lowest_price":${JSON.stringify(steamMoney(quote.text))}`);
    const volume = fixed?.quantity ?? (quote ? Math.max(1, generatedQuantity(entry, 'steam', quote.cents)) : 0);
    if (volume > 0) fields.push(`"volume":${JSON.stringify(withThousands(String(volume)))}`);
    const median = fixed
      ? fixed.median === undefined
        ? quote?.text
        : (fixed.median ?? undefined)
      : quote
        ? quoteFromCents(Math.round(quote.cents * (1.01 + 0.1 * unit(mix(entry.hash, bucket, 5))))).text
        : undefined;
    if (median) fields.push(`"median_price":${JSON.stringify(steamMoney(median))}`);
    return json(`{${fields.join(',')}}`);
  }

  // Steam's search pages (test/fakes/simulator/steam-search.ts): priceoverview's ask and volume per item,
  // a new item from its time (the list changes once a bucket at most, and only with new items).
  let searchListed = { bucket: Number.NaN, entries: defaults };
  const searchEntries = () => {
    const bucket = bucketOf(now());
    if (newItems.items.length > 0 && bucket !== searchListed.bucket) searchListed = { bucket, entries: defaults.filter((entry) => newItems.isListed(entry.item, bucket)) };
    return searchListed.entries;
  };
  const steamSearch = createSteamSearch(searchEntries, (entry) => entry.name, (entry) => {
    const quote = ask(entry, 'steam', bucketOf(now()));
    return { cents: quote?.cents ?? null, listings: quote ? (entry.fixed?.quantity ?? Math.max(1, generatedQuantity(entry, 'steam', quote.cents))) : 0, hash: entry.hash };
  });

  // ---- csfloat -------------------------------------------------------------------------------

  // Every listing of the market as [entry index, slot], in one seeded shuffled order (pages mix items).
  const listingSlots: [number, number][] = [];
  for (const [index, entry] of csfloatEntries.entries()) {
    let count: number;
    if (entry.fixed) count = entry.fixed.listings?.length ?? (pinFor(entry.fixed, 'csfloat') === null ? 0 : (entry.fixed.quantity ?? 1 + (entry.hash % 4)));
    else count = generatedQuantity(entry, 'csfloat', Math.round(entry.base * 100));
    for (let slot = 0; slot < count; slot += 1) listingSlots.push([index, slot]);
  }
  const random = mulberry32(seed ^ 0xc5f10a7);
  for (let i = listingSlots.length - 1; i > 0; i -= 1) {
    const j = Math.floor(random() * (i + 1));
    [listingSlots[i], listingSlots[j]] = [listingSlots[j]!, listingSlots[i]!];
  }

  function listingCents(entry: Entry, slot: number, bucket: number): number {
    if (entry.fixed?.listings) return entry.fixed.listings[slot]!;
    if (entry.fixed) return pinFor(entry.fixed, 'csfloat')!.cents!;
    const cheapest = ask(entry, 'csfloat', bucket)!.cents;
    return slot === 0 ? cheapest : Math.round(cheapest * (1 + 0.015 * slot + 0.05 * unit(mix(entry.hash, slot, bucket))));
  }

  function listing(position: number, bucket: number, corrupt: boolean, wrongTypes = false): Record<string, unknown> {
    const [entryIndex, slot] = listingSlots[position]!;
    const entry = csfloatEntries[entryIndex]!;
    const h = mix(entry.hash, slot, 11);
    // A market that has not moved keeps its listings as they were (price and created_at), like skinport's
    // rows keep their updated_at: only about one item in ten is relisted per bucket.
    const moved = entry.fixed ? bucket : changeBucket(entry, 'csfloat', bucket);
    const createdMs = moved * bucketMs - (h % 21_600) * 1000 - (mix(h, 1) % 1000);
    const iso = new Date(createdMs).toISOString().replace('Z', `${String(mix(h, 2) % 1000).padStart(3, '0')}Z`);
    const exterior = exteriorOf(entry.name);
    const item: Record<string, unknown> = {
      asset_id: String(20_000_000_000 + (h % 10_000_000_000)),
      def_index: entry.item.definition_index ?? 0,
      paint_index: entry.item.paint_index ?? 0,
      paint_seed: entry.item.paint_index != null ? mix(h, 3) % 1001 : 0,
      is_stattrak: entry.item.stattrak ?? entry.name.includes('StatTrak™'),
      is_souvenir: entry.item.souvenir ?? entry.name.startsWith('Souvenir '),
      market_hash_name: entry.name,
      item_name: entry.name.replace(/\s*\([^()]+\)\s*$/, ''),
      tradable: 0,
    };
    if (exterior) {
      const [low, high] = EXTERIORS[exterior]!.wear;
      item.float_value = low + (high - low) * unit(mix(h, 4));
      item.wear_name = exterior;
    }
    if (entry.label) item.phase = entry.label;
    const result: Record<string, unknown> = {
      id: String(700_000_000_000_000_000n + BigInt(position)),
      created_at: iso,
      type: 'buy_now',
      price: listingCents(entry, slot, moved),
      state: 'listed',
      seller: { steam_id: String(76_561_198_000_000_000n + BigInt(mix(h, 5) % 1_000_000)), online: true, stall_public: true },
      item,
    };
    if (wrongTypes) {
      result.price = position % 2 === 0 ? { amount: result.price } : true;
      if (item.float_value !== undefined) item.float_value = String(item.float_value);
      item.paint_seed = String(item.paint_seed);
    }
    if (corrupt) {
      const kind = Math.floor(position / 3) % 3;
      if (kind === 0) delete item.market_hash_name;
      else if (kind === 1) result.price = String(result.price);
      else result.price = -(result.price as number);
    }
    return result;
  }

  function csfloat(url: URL): Response {
    const limitText = url.searchParams.get('limit') ?? '50';
    const limit = Number(limitText);
    if (!/^[0-9]+$/.test(limitText) || limit < 1) return Response.json({ code: 4, message: 'invalid limit' }, { status: 400 });
    const pageSize = Math.min(limit, 1000);
    const cursor = url.searchParams.get('cursor');
    let offset = 0;
    if (cursor) {
      const decoded = /^o([0-9]+)$/.exec(Buffer.from(cursor, 'base64url').toString());
      if (!decoded) return Response.json({ code: 4, message: 'invalid cursor' }, { status: 400 });
      offset = Number(decoded[1]);
    }
    const bucket = bucketOf(now());
    const partial = modes.csfloat === 'partial';
    const wrongTypes = modes.csfloat === 'wrong_types';
    const end = Math.min(offset + pageSize, listingSlots.length);
    const data: Record<string, unknown>[] = [];
    for (let position = offset; position < end; position += 1) data.push(listing(position, bucket, partial && position % 3 === 1, wrongTypes));
    const body: Record<string, unknown> = { data };
    if (end < listingSlots.length) body.cursor = Buffer.from(`o${end}`).toString('base64url');
    return Response.json(body);
  }

  // ---- the six marketplaces (DESIGN 13) and skinbaron (DESIGN 14) ---------------------------

  /** Each marketplace's fixed per-item bias, at most ±4 % (log), beside its level and its own drift. */
  const ITEM_BIAS = 0.04;
  /** Generated asks in whole cents (bitskins: thousandths that are whole cents); csmarket and waxpeer to the thousandth. */
  const WHOLE_CENTS: Record<BodySource, boolean> = { csmarket: false, lisskins: true, waxpeer: false, whitemarket: true, bitskins: true, csdeals: true, skinbaron: true };
  /** Listing depth relative to skinport's (counts are 1 + v³ × cap × depth). */
  const DEPTH: Record<BodySource, number> = { csmarket: 1, lisskins: 0.6, waxpeer: 0.5, whitemarket: 0.25, bitskins: 0.35, csdeals: 1, skinbaron: 0.4 };

  /** Per marketplace and entry id: the bucket last asked (NaN: never), the bucket its price last moved in, the price. */
  const marketMemo = Object.fromEntries(
    BODY_SOURCES.map((source) => [source, { asked: new Float64Array(entryCount).fill(NaN), moved: new Float64Array(entryCount), mills: new Float64Array(entryCount) }]),
  ) as Record<BodySource, { asked: Float64Array; moved: Float64Array; mills: Float64Array }>;

  /** A marketplace ask: thousandths of USD, the pinned text (null when generated), the bucket it last moved in (0 for a pin). */
  type MarketQuote = { mills: number; pin: string | null; moved: number };

  /**
   * The lowest ask of an entry in a marketplace, or null when it has none for sale there (its seeded
   * absent share, or a pin saying so). An item with phases: the lowest of its listed phases.
   */
  function marketAsk(entry: Entry, source: BodySource, bucket: number): MarketQuote | null {
    if (!newItems.isListed(entry.item, bucket)) return null;
    if (entry.fixed) {
      const pin = pinFor(entry.fixed, source);
      return pin ? { mills: pin.mills, pin: pin.text, moved: 0 } : null;
    }
    if (entry.phaseEntries.length > 0) {
      let best: MarketQuote | null = null;
      let moved = 0;
      for (const phase of entry.phaseEntries) {
        const quote = marketAsk(phase, source, bucket);
        if (!quote) continue;
        moved = Math.max(moved, quote.moved);
        if (!best || quote.mills < best.mills) best = quote;
      }
      return best && { ...best, moved };
    }
    const salt = SOURCE_SALT[source];
    if (unit(mix(entry.hash, salt, 13)) < ABSENT_SHARE[source]) return null;
    // The memo spares the drift of the ~90 % of prices that did not move since the last bucket asked.
    const memo = marketMemo[source];
    const id = entry.id;
    const asked = memo.asked[id]!;
    if (asked === bucket) return { mills: memo.mills[id]!, pin: null, moved: memo.moved[id]! };
    let moved: number;
    if (asked < bucket && bucket - asked <= 64) {
      // changeBucket's answer, from the one it gave at `asked` and the buckets since.
      moved = NaN;
      for (let b = bucket; b > asked; b -= 1) {
        if (unit(mix(entry.hash, salt, b, 11)) < CHANGE_SHARE) {
          moved = b;
          break;
        }
      }
      if (Number.isNaN(moved)) {
        const previous = memo.moved[id]!;
        moved = previous > asked - 64 && previous >= bucket - 63 ? previous : bucket - 64;
      }
    } else moved = changeBucket(entry, source, bucket);
    let mills: number;
    if (!Number.isNaN(asked) && moved === memo.moved[id]) mills = memo.mills[id]!;
    else {
      const bias = ITEM_BIAS * (2 * unit(mix(entry.hash, salt, 12)) - 1);
      const level = entry.base * SOURCE_LEVEL[source] * Math.exp(drift(entry.hash, moved) + drift(entry.hash ^ salt, moved, 0.3) + bias);
      mills = Math.max(30, WHOLE_CENTS[source] ? Math.round(level * 100) * 10 : Math.round(level * 1000));
    }
    memo.asked[id] = bucket;
    memo.moved[id] = moved;
    memo.mills[id] = mills;
    return { mills, pin: null, moved };
  }

  /** Listings behind an ask: a pin's quantity, or generated (changing only when the price moves). */
  function marketCount(entry: Entry, source: BodySource, quote: MarketQuote): number {
    const pinned = entry.fixed?.quantity;
    if (pinned !== undefined && pinned > 0) return pinned;
    const v = unit(mix(entry.hash, SOURCE_SALT[source], quote.moved, 8));
    const cents = quote.mills / 10;
    const cap = cents < 100 ? 3000 : cents < 1000 ? 800 : cents < 10_000 ? 150 : cents < 100_000 ? 30 : 6;
    return 1 + Math.floor(v * v * v * cap * DEPTH[source]);
  }

  const millsText = (mills: number) => `${Math.floor(mills / 1000)}.${String(mills % 1000).padStart(3, '0')}`;
  /** "30.100" → "30.1", "2.000" → "2". */
  const trimmedText = (mills: number) => {
    const fraction = mills % 1000;
    const whole = Math.floor(mills / 1000);
    if (fraction === 0) return String(whole);
    if (fraction % 100 === 0) return `${whole}.${fraction / 100}`;
    if (fraction % 10 === 0) return `${whole}.${String(fraction / 10).padStart(2, '0')}`;
    return `${whole}.${String(fraction).padStart(3, '0')}`;
  };
  /** A USD decimal: the pin verbatim, else two decimals (three when the ask is not whole cents). */
  const usdText = (quote: MarketQuote) => quote.pin ?? (quote.mills % 10 === 0 ? quoteFromCents(quote.mills / 10).text : millsText(quote.mills));

  /** In partial mode, how row `index` is broken: 0 no name, 1 price of a wrong type, 2 negative price; null: intact. */
  const brokenKind = (mode: SimulatorMode, index: number) => (mode === 'partial' && index % 3 === 1 ? Math.floor(index / 3) % 3 : null);
  /** A price field's JSON text (`"2.300"`, `2300`) as the mode writes it. */
  function money(json: string, index: number, mode: SimulatorMode): string {
    if (mode === 'wrong_types') return wrongType(json, index);
    const kind = brokenKind(mode, index);
    if (kind === 1) return `{"amount":${json}}`;
    if (kind === 2) return json.startsWith('"') ? `"-${json.slice(1)}` : `-${json}`;
    return json;
  }
  /** A secondary money field (buy orders, averages, maxima): wrong only in wrong_types. */
  const extraMoney = (json: string, index: number, mode: SimulatorMode) => (mode === 'wrong_types' && json !== 'null' ? wrongType(json, index) : json);
  const countText = (count: number, mode: SimulatorMode) => (mode === 'wrong_types' ? `"${count}"` : String(count));
  const nameMember = (key: string, entry: Entry, index: number, mode: SimulatorMode) => (brokenKind(mode, index) === 0 ? '' : `"${key}":${entry.nameJson},`);

  const slugs = new Map<Entry, string>();
  const slugOf = (entry: Entry) => {
    let text = slugs.get(entry);
    if (text === undefined) slugs.set(entry, (text = slug(entry.name)));
    return text;
  };

  // csmarket: one object member per (classid, instanceid); a name under 1–3 keys.
  const RU_EXTERIORS: Record<string, string> = {
    'Factory New': 'Прямо с завода',
    'Minimal Wear': 'Немного поношенное',
    'Field-Tested': 'После полевых испытаний',
    'Well-Worn': 'Поношенное',
    'Battle-Scarred': 'Закалённое в боях',
  };
  /** The name's JSON with a Russian exterior, from its JSON text (`"… (Field-Tested)"` → `"… (После полевых испытаний)"`). */
  const ruNameJson = (entry: Entry) => {
    const json = entry.nameJson;
    const open = json.lastIndexOf('(');
    const russian = open > 0 && json.endsWith(')"') ? RU_EXTERIORS[json.slice(open + 1, -2)] : undefined;
    return russian ? `${json.slice(0, open + 1)}${russian})"` : json;
  };

  function csmarketBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    const salt = SOURCE_SALT.csmarket;
    for (const entry of defaults) {
      const quote = marketAsk(entry, 'csmarket', bucket);
      if (!quote) continue;
      const u = unit(mix(entry.hash, salt, 21));
      const keys = u < 0.05 ? 3 : u < 0.2 ? 2 : 1;
      const h = mix(entry.hash, salt, quote.moved);
      let bid: { mills: number; text: string } | null;
      const pinnedBid = entry.fixed?.bid;
      if (pinnedBid !== undefined) bid = pinnedBid;
      else if (unit(mix(h, 2)) < 0.3) bid = null;
      else {
        const mills = Math.max(1, Math.min(quote.mills - 1, Math.round(quote.mills * (0.82 + 0.15 * unit(mix(h, 3))))));
        bid = { mills, text: trimmedText(mills) };
      }
      const bidKey = mix(h, 9) % keys;
      const volume = entry.fixed?.volume7d;
      const cents = quote.mills / 10;
      const volumeCap = cents < 100 ? 1500 : cents < 1000 ? 400 : cents < 10_000 ? 60 : cents < 100_000 ? 12 : 3;
      const start = mix(h, 10) % keys;
      for (let j = 0; j < keys; j += 1) {
        // Key 0 carries the ask; the keys are written starting from `start`, so it can be anywhere.
        const k = (start + j) % keys;
        const index = rows.count;
        const mills = k === 0 ? quote.mills : quote.mills + Math.max(1, Math.round(quote.mills * (0.01 + 0.15 * unit(mix(h, k, 1)))));
        const priceJson = `"${millsText(mills)}"`;
        let buyOrder = 'null';
        if (bid && k === bidKey) buyOrder = `"${bid.text}"`;
        else if (bid && unit(mix(h, k, 4)) >= 0.5) buyOrder = `"${trimmedText(Math.max(1, Math.floor(bid.mills * (0.6 + 0.35 * unit(mix(h, k, 5))))))}"`;
        const avg = unit(mix(h, k, 7)) < 0.2 ? 'null' : `"${trimmedText(Math.max(1, Math.round(mills * (0.93 + 0.12 * unit(mix(h, k, 8))))))}"`;
        let popularity: string;
        if (volume === null) popularity = 'null';
        else if (volume !== undefined) popularity = `"${Math.floor(volume / keys) + (k < volume % keys ? 1 : 0)}"`;
        else if (unit(mix(h, k, 6)) < 0.25) popularity = 'null';
        else {
          const w = unit(mix(h, k, 11));
          popularity = `"${Math.floor(w * w * volumeCap)}"`;
        }
        if (mode === 'wrong_types' && popularity !== 'null') popularity = `{"count":${popularity}}`;
        const classid = 300_000_000 + entry.ordinal * 4 + k;
        const instanceid = k === 0 && entry.hash % 2 === 0 ? 0 : 100_000_000 + (mix(entry.hash, k, 24) % 4_000_000_000);
        const ru = unit(mix(entry.hash, k, 25)) < 0.6 ? `,"ru_name":${ruNameJson(entry)}` : '';
        rows.row(
          `"${classid}_${instanceid}":{"price":${money(priceJson, index, mode)},"buy_order":${extraMoney(buyOrder, index, mode)},` +
            `"avg_price":${extraMoney(avg, index, mode)},"popularity_7d":${popularity},${nameMember('market_hash_name', entry, index, mode)}` +
            `"text_color":"D2D2D2"${ru}}`,
        );
      }
    }
  }

  function lisskinsBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    const salt = SOURCE_SALT.lisskins;
    for (const entry of defaults) {
      const quote = marketAsk(entry, 'lisskins', bucket);
      if (!quote) continue;
      const index = rows.count;
      const h = mix(entry.hash, salt, quote.moved);
      const price = usdText(quote);
      let unlocked: string;
      if (quote.pin !== null) unlocked = quote.pin;
      else {
        const r = unit(mix(h, 2));
        unlocked = r < 0.25 ? 'null' : r < 0.75 ? price : quoteFromCents(Math.round((quote.mills / 10) * (1.01 + 0.1 * unit(mix(h, 3))))).text;
      }
      rows.row(
        `{${nameMember('name', entry, index, mode)}"price":${money(price, index, mode)},"unlocked_price":${extraMoney(unlocked, index, mode)},` +
          `"count":${countText(marketCount(entry, 'lisskins', quote), mode)},"url":"https://lis-skins.com/market/csgo/${slugOf(entry)}/"}`,
      );
    }
  }

  const RARITY_COLORS = ['#b0c3d9', '#5e98d9', '#4b69ff', '#8847ff', '#d32ce6', '#eb4b4b', '#e4ae39'];
  function waxpeerType(name: string): string {
    if (name.startsWith('★')) return /Gloves|Wraps/.test(name) ? 'Gloves' : 'Knife';
    if (name.startsWith('Sticker |')) return 'Sticker';
    if (name.startsWith('Patch |')) return 'Patch';
    if (name.startsWith('Charm |')) return 'Charm';
    if (name.includes('Graffiti |')) return 'Graffiti';
    if (name.includes('Music Kit |')) return 'Music Kit';
    if (/(Case|Capsule|Package|Box)$/.test(name)) return 'Container';
    return exteriorOf(name) ? 'Weapon' : 'Other';
  }

  /** Listings of one phase on waxpeer's dopplers endpoint (at most 50). */
  const waxpeerListings = (phase: Entry, quote: MarketQuote) => Math.min(50, marketCount(phase, 'waxpeer', quote));

  function waxpeerBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    const salt = SOURCE_SALT.waxpeer;
    for (const entry of defaults) {
      const quote = marketAsk(entry, 'waxpeer', bucket);
      if (!quote) continue;
      const index = rows.count;
      const h = mix(entry.hash, salt, quote.moved);
      let count = 0;
      if (entry.phaseEntries.length > 0 && !entry.fixed) {
        for (const phase of entry.phaseEntries) {
          const phaseQuote = marketAsk(phase, 'waxpeer', bucket);
          if (phaseQuote) count += waxpeerListings(phase, phaseQuote);
        }
      } else count = marketCount(entry, 'waxpeer', quote);
      const steamPrice = unit(mix(entry.hash, salt, 30)) < 0.1 ? '' : `,"steam_price":${extraMoney(String(Math.round((quote.mills * (1.12 + 0.2 * unit(mix(h, 4)))) / 10) * 10), index, mode)}`;
      const img = unit(mix(entry.hash, salt, 31)) < 0.05 ? '' : `,"img":"https://community.cloudflare.steamstatic.com/economy/image/${entry.hash.toString(36)}${mix(entry.hash, 32).toString(36)}"`;
      rows.row(
        `{${nameMember('name', entry, index, mode)}"count":${countText(count, mode)},"min":${money(String(quote.mills), index, mode)}${steamPrice}${img},` +
          `"type":"${waxpeerType(entry.name)}","rarity_color":"${RARITY_COLORS[entry.hash % RARITY_COLORS.length]}"}`,
      );
    }
  }

  // Knife Doppler / Gamma Doppler paint indexes by phase (other weapons: the catalog's own).
  const DOPPLER_PAINT: Record<string, number> = { ruby: 415, sapphire: 416, 'black-pearl': 417, 'phase-1': 418, 'phase-2': 419, 'phase-3': 420, 'phase-4': 421 };
  const GAMMA_DOPPLER_PAINT: Record<string, number> = { emerald: 568, 'phase-1': 569, 'phase-2': 570, 'phase-3': 571, 'phase-4': 572 };
  function phasePaintIndex(phase: Entry): number {
    const table = phase.name.includes('Gamma Doppler') ? GAMMA_DOPPLER_PAINT : DOPPLER_PAINT;
    return phase.name.startsWith('★') ? (table[phase.version] ?? phase.item.paint_index ?? 0) : (phase.item.paint_index ?? table[phase.version] ?? 0);
  }

  function waxpeerDopplersBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    const salt = SOURCE_SALT.waxpeer;
    for (const entry of defaults) {
      for (const phase of entry.phaseEntries) {
        const quote = marketAsk(phase, 'waxpeer', bucket);
        if (!quote) continue;
        const listings = waxpeerListings(phase, quote);
        const h = mix(phase.hash, salt, quote.moved);
        const start = mix(h, 10) % listings;
        const exterior = exteriorOf(phase.name);
        const paint = phasePaintIndex(phase);
        for (let j = 0; j < listings; j += 1) {
          // Slot 0 is the phase's ask; the others are dearer. Written from `start`, so the cheapest can be anywhere.
          const slot = (start + j) % listings;
          const index = rows.count;
          const mills = slot === 0 ? quote.mills : quote.mills + Math.max(1, Math.round(quote.mills * (0.01 * slot + 0.04 * unit(mix(h, slot, 11)))));
          let float = '';
          if (exterior && unit(mix(h, slot, 13)) >= 0.1) {
            const [low, high] = EXTERIORS[exterior]!.wear;
            float = `,"float":${low + (high - low) * unit(mix(h, slot, 12))}`;
          }
          rows.row(
            `{${nameMember('name', phase, index, mode)}"phase":"${phase.label}","price":${money(String(mills), index, mode)},` +
              `"paint_index":${mode === 'wrong_types' ? `"${paint}"` : paint},"item_id":"${29_000_000_000 + mix(phase.hash, slot, quote.moved, 14)}"${float}}`,
          );
        }
      }
    }
  }

  function whitemarketBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    for (const entry of defaults) {
      const quote = marketAsk(entry, 'whitemarket', bucket);
      if (!quote) continue;
      const index = rows.count;
      // Even rows write the price as a string, odd rows as a JSON number.
      const price = index % 2 === 0 ? `"${usdText(quote)}"` : usdText(quote);
      rows.row(
        `{${nameMember('market_hash_name', entry, index, mode)}"price":${money(price, index, mode)},` +
          `"market_product_link":"https://white.market/item/${slugOf(entry)}","market_product_count":${countText(marketCount(entry, 'whitemarket', quote), mode)}}`,
      );
    }
  }

  /** BitSkins writes the phase into the name: `★ Karambit | Doppler Ruby (Factory New)`. */
  const bitskinsName = (phase: Entry) => {
    const exterior = /\s\(([^()]+)\)$/.exec(phase.name);
    return JSON.stringify(exterior ? `${phase.name.slice(0, exterior.index)} ${phase.label} (${exterior[1]})` : `${phase.name} ${phase.label}`);
  };

  function bitskinsBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    const salt = SOURCE_SALT.bitskins;
    for (const entry of defaults) {
      const leaves = entry.phaseEntries.length > 0 ? entry.phaseEntries : [entry];
      for (const [p, leaf] of leaves.entries()) {
        const quote = marketAsk(leaf, 'bitskins', bucket);
        if (!quote) continue;
        const index = rows.count;
        const quantity = marketCount(leaf, 'bitskins', quote);
        const h = mix(leaf.hash, salt, quote.moved);
        let max = quote.mills;
        let avg = quote.mills;
        if (quantity > 1) {
          max = Math.round((quote.mills * (1.2 + 2 * unit(mix(h, 1)))) / 10) * 10;
          avg = quote.mills + Math.round(((max - quote.mills) * (0.1 + 0.3 * unit(mix(h, 2)))) / 10) * 10;
        }
        const skinId = 1 + entry.ordinal * 9 + p;
        const name = leaf.label ? bitskinsName(leaf) : leaf.nameJson;
        rows.row(
          `{"skin_id":${mode === 'wrong_types' ? `"${skinId}"` : skinId},${brokenKind(mode, index) === 0 ? '' : `"name":${name},`}` +
            `"price_min":${money(String(quote.mills), index, mode)},"price_max":${extraMoney(String(max), index, mode)},` +
            `"price_avg":${extraMoney(String(avg), index, mode)},"quantity":${countText(quantity, mode)}}`,
        );
      }
    }
  }

  function csdealsBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    for (const entry of defaults) {
      const quote = marketAsk(entry, 'csdeals', bucket);
      if (!quote) continue;
      const index = rows.count;
      rows.row(`{${nameMember('marketname', entry, index, mode)}"lowest_price":${money(`"${usdText(quote)}"`, index, mode)}}`);
    }
  }

  /** Skinbaron's undocumented `dopplerClassName` for a phase version: `phase-2` → "phase2", `black-pearl` → "blackpearl". */
  const dopplerClassName = (version: string) => version.replaceAll('-', '');

  /**
   * Skinbaron (DESIGN 14): the shared market's USD ask in EUR at the day's USD rate, to the euro cent
   * (EUR cents = USD mills × 10^d / (10 × rate units), integer arithmetic then one rounding); a
   * `sources.skinbaron` pin is EUR already. Doppler names: the plain row, then a row per listed phase.
   */
  function skinbaronBody(bucket: number, mode: SimulatorMode, rows: BodyWriter): void {
    const usd = ecbUsdRate(seed, new Date(bucket * bucketMs));
    const eurText = (entry: Entry, quote: MarketQuote) => {
      if (quote.pin !== null && entry.fixed?.sources.skinbaron) return quote.pin;
      const cents = Math.max(1, Math.round((quote.mills * 10 ** usd.decimals) / (10 * usd.units)));
      return quoteFromCents(cents).text;
    };
    const row = (entry: Entry, quote: MarketQuote, doppler: string | null) => {
      const index = rows.count;
      const [minWear, maxWear] = EXTERIORS[exteriorOf(entry.name) ?? '']?.wear ?? [null, null];
      rows.row(
        `{${nameMember('marketHashName', entry, index, mode)}"lowestPrice":${money(eurText(entry, quote), index, mode)},` +
          `"minWear":${minWear ?? 'null'},"maxWear":${maxWear ?? 'null'},` +
          `"imageUrl":"https://steamcommunity-a.akamaihd.net/economy/image/${slugOf(entry)}/","dopplerClassName":${doppler === null ? 'null' : JSON.stringify(doppler)}}`,
      );
    };
    for (const entry of defaults) {
      const quote = marketAsk(entry, 'skinbaron', bucket);
      if (!quote) continue;
      row(entry, quote, null);
      for (const phase of entry.phaseEntries) {
        const phaseQuote = marketAsk(phase, 'skinbaron', bucket);
        if (phaseQuote) row(phase, phaseQuote, dopplerClassName(phase.version));
      }
    }
  }

  type MarketEndpoint = BodySource | 'waxpeer-dopplers';
  /** Each body: the JSON before its rows, the rows, the JSON after them. */
  const MARKET_BODIES: Record<MarketEndpoint, { head: (bucket: number) => string; rows: (bucket: number, mode: SimulatorMode, out: BodyWriter) => void; tail: string }> = {
    csmarket: { head: (bucket) => `{"success":true,"time":${Math.floor((bucket * bucketMs) / 1000)},"currency":"USD","items":{`, rows: csmarketBody, tail: '}}' },
    lisskins: { head: () => '[', rows: lisskinsBody, tail: ']' },
    waxpeer: { head: () => '{"success":true,"items":[', rows: waxpeerBody, tail: ']}' },
    'waxpeer-dopplers': { head: () => '{"success":true,"items":[', rows: waxpeerDopplersBody, tail: ']}' },
    whitemarket: { head: () => '[', rows: whitemarketBody, tail: ']' },
    bitskins: { head: () => '{"list":[', rows: bitskinsBody, tail: ']}' },
    csdeals: { head: () => '{"success":true,"response":{"items":[', rows: csdealsBody, tail: ']}}' },
    skinbaron: { head: () => '[', rows: skinbaronBody, tail: ']' },
  };
  /**
   * One body per endpoint, built once per (bucket, mode) and served to every request of that bucket.
   * It is kept gzipped (level 1: ~4 ms a MB, a fifth of the size; ~5 MB instead of ~28 MB for the six
   * over the real catalog) and sent as is to clients that accept gzip, as the real hosts do.
   */
  const marketCache = new Map<MarketEndpoint, { bucket: number; mode: SimulatorMode; gzip: Uint8Array<ArrayBuffer>; bytes: number; ms: number; gzipMs: number }>();

  function marketBody(endpoint: MarketEndpoint, mode: SimulatorMode): { gzip: Uint8Array<ArrayBuffer>; bytes: number } {
    const bucket = bucketOf(now());
    const cached = marketCache.get(endpoint);
    if (cached?.bucket === bucket && cached.mode === mode) return cached;
    const started = performance.now();
    const { head, rows, tail } = MARKET_BODIES[endpoint];
    const out = new BodyWriter(head(bucket), (cached?.bytes ?? 0) + 65_536);
    rows(bucket, mode, out);
    const body = out.end(tail);
    const built = performance.now();
    const entry = { bucket, mode, gzip: Bun.gzipSync(body, { level: 1 }), bytes: body.byteLength, ms: 0, gzipMs: 0 };
    entry.ms = Math.round((built - started) * 10) / 10;
    entry.gzipMs = Math.round((performance.now() - built) * 10) / 10;
    marketCache.set(endpoint, entry);
    return entry;
  }

  /** Skinbaron's request checks (DESIGN 14): the header, then the JSON body `{apikey, appId: 730}`; any non-empty key passes. */
  async function skinbaronRefusal(request: Request): Promise<Response | null> {
    const refuse = (status: number, message: string) => Response.json({ message }, { status });
    if (request.headers.get('x-requested-with') !== 'XMLHttpRequest') return refuse(400, 'x-requested-with: XMLHttpRequest is required');
    let body: unknown;
    try {
      body = await request.json();
    } catch {
      return refuse(400, 'the body must be JSON');
    }
    const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
    if (typeof fields.apikey !== 'string' || fields.apikey === '') return refuse(401, 'wrong or missing apikey');
    if (fields.appId !== 730) return refuse(400, 'appId must be 730 in this simulator');
    return null;
  }

  function marketplace(endpoint: MarketEndpoint, source: BodySource, request: Request, url: URL): Response {
    const json = (text: string | Uint8Array<ArrayBuffer>, status = 200) => new Response(text, { status, headers: { 'content-type': 'application/json; charset=utf-8' } });
    if (source === 'waxpeer') {
      if (url.searchParams.get('game') !== 'csgo') return json('{"success":false,"msg":"game must be csgo in this simulator"}', 400);
      const phase = url.searchParams.get('phase');
      if (endpoint === 'waxpeer-dopplers' && phase !== null && phase !== 'any') return json('{"success":false,"msg":"phase must be any in this simulator"}', 400);
    }
    if (source === 'csdeals' && url.searchParams.get('appid') !== '730') return json('{"success":false,"error":"appid must be 730 in this simulator"}', 400);
    const { gzip } = marketBody(endpoint, modes[source]);
    if (!/\bgzip\b/.test(request.headers.get('accept-encoding') ?? '')) return json(Bun.gunzipSync(gzip));
    return new Response(gzip, { headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'gzip', vary: 'Accept-Encoding' } });
  }

  // ---- modes and routing ---------------------------------------------------------------------

  type Endpoint = SimulatorTarget | 'waxpeer-dopplers' | 'skinport-sales';
  const MALFORMED: Record<Endpoint, string> = {
    skinport: '[{"market_hash_name":"AK-47 | Redline (Field-Tested)","version":null,"min_price":',
    'skinport-sales': '[{"market_hash_name":"AK-47 | Redline (Field-Tested)","version":null,"currency":"USD","last_24_hours":{"min":12.3',
    steam: '{"success":tru',
    csfloat: '{"data":[{"id":"1","price":12',
    csmarket: '{"success":true,"time":1772366400,"currency":"USD","items":{"310776668_0":{"price":"32.39',
    lisskins: '[{"name":"AK-47 | Redline (Field-Tested)","price":12.3',
    waxpeer: '{"success":true,"items":[{"name":"AK-47 | Redline (Field-Tested)","count":3,"min":93',
    'waxpeer-dopplers': '{"success":true,"items":[{"name":"★ Karambit | Doppler (Factory New)","phase":"Ruby","price":',
    whitemarket: '[{"market_hash_name":"AK-47 | Redline (Field-Tested)","price":"1.2',
    bitskins: '{"list":[{"skin_id":1,"name":"AK-47 | Redline (Field-Tested)","price_min":12',
    csdeals: '{"success":true,"response":{"items":[{"marketname":"AK-47 | Redline (Field-Tested)","lowest_price":"1.',
    skinbaron: '[{"marketHashName":"AK-47 | Redline (Field-Tested)","lowestPrice":27.9',
    fx: `${ECB_HEAD}\t<Cube>\n\t\t<Cube time='2026-11-24'>\n\t\t\t<Cube currency='USD' rate='1.08`,
  };
  const RATE_LIMITED_BODY: Record<SimulatorTarget, string> = {
    skinport: '{"errors":[{"id":"rate_limit_exceeded","message":"Rate limit exceeded"}]}',
    steam: 'null',
    csfloat: '{"code":20,"message":"too many requests, try again later"}',
    csmarket: '{"success":false,"error":"Too many requests"}',
    lisskins: '{"error":"Too Many Requests"}',
    waxpeer: '{"success":false,"msg":"Too many requests, try again later"}',
    whitemarket: '{"message":"Too Many Requests"}',
    bitskins: '{"code":"TOO_MANY_REQUESTS","message":"Too many requests"}',
    csdeals: '{"success":false,"error":"Too many requests"}',
    skinbaron: '{"message":"Too many requests"}',
    fx: '<html><head><title>429 Too Many Requests</title></head><body><h1>Too Many Requests</h1></body></html>',
  };

  function forMode(source: SimulatorTarget, endpoint: Endpoint, request: Request): Response | Promise<Response> | null {
    switch (modes[source]) {
      case 'fail':
        return new Response('<html><body><h1>500 Internal Server Error</h1></body></html>', { status: 500, headers: { 'content-type': 'text/html' } });
      case 'stall':
        return new Promise<Response>((resolve) => {
          const finish = (response: Response) => {
            stalled.delete(finish);
            resolve(response);
          };
          stalled.add(finish);
          request.signal.addEventListener('abort', () => finish(new Response(null, { status: 499 })));
        });
      case 'rate_limit': {
        const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
        if (retryAfter !== null) headers['retry-after'] = retryAfter;
        return new Response(RATE_LIMITED_BODY[source], { status: 429, headers });
      }
      case 'malformed':
        return new Response(MALFORMED[endpoint], { headers: { 'content-type': source === 'fx' ? 'text/xml' : 'application/json; charset=utf-8' } });
      default:
        return null;
    }
  }

  function setMode(source: SimulatorTarget | 'all', mode: SimulatorMode): void {
    for (const name of source === 'all' ? SIMULATOR_TARGETS : [source]) modes[name] = mode;
    if (source === 'all' || source === 'steam') steamPartialCounter = 0;
  }

  const ROUTES = new Map<string, [SimulatorTarget, Endpoint]>([
    ['/skinport/v1/items', ['skinport', 'skinport']],
    ['/skinport/v1/sales/history', ['skinport', 'skinport-sales']],
    ['/steam/market/priceoverview', ['steam', 'steam']],
    ['/steam/market/search/render', ['steam', 'steam']],
    ['/csfloat/api/v1/listings', ['csfloat', 'csfloat']],
    ['/csmarket/api/v2/prices/class_instance/USD.json', ['csmarket', 'csmarket']],
    ['/lisskins/market_export_json/csgo.json', ['lisskins', 'lisskins']],
    ['/waxpeer/v1/prices', ['waxpeer', 'waxpeer']],
    ['/waxpeer/v1/prices/dopplers', ['waxpeer', 'waxpeer-dopplers']],
    ['/whitemarket/export/v1/prices/730.json', ['whitemarket', 'whitemarket']],
    ['/bitskins/market/insell/730', ['bitskins', 'bitskins']],
    ['/csdeals/API/IPricing/GetLowestPrices/v1', ['csdeals', 'csdeals']],
    ['/skinbaron/GetExtendedPriceList', ['skinbaron', 'skinbaron']],
    ['/fx/stats/eurofxref/eurofxref-daily.xml', ['fx', 'fx']],
  ]);
  /** The last build of each marketplace body: bucket, mode, size and build time (GET /_control shows them). */
  const bodyStats = () =>
    Object.fromEntries(
      [...marketCache].map(([endpoint, { bucket, mode, gzip, bytes, ms, gzipMs }]) => [endpoint, { bucket, mode, bytes, gzip_bytes: gzip.byteLength, build_ms: ms, gzip_ms: gzipMs }]),
    );

  const server: Server<undefined> = Bun.serve({
    port: options.port ?? 0,
    hostname: options.hostname ?? '127.0.0.1',
    // A stalled answer must stay stalled: no idle timeout closes it.
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const path = url.pathname.replace(/\/+$/, '');
      if (path.startsWith('/_control')) {
        if (request.method === 'GET' && path === '/_control') return Response.json({ modes, retry_after: retryAfter, bodies: bodyStats() });
        const [, , source, mode] = path.split('/');
        if (request.method !== 'POST') return new Response(null, { status: 405 });
        if (!(source === 'all' || (SIMULATOR_TARGETS as readonly string[]).includes(source ?? '')) || !(SIMULATOR_MODES as readonly string[]).includes(mode ?? '')) {
          return Response.json({ error: `use POST /_control/<${SIMULATOR_TARGETS.join('|')}|all>/<${SIMULATOR_MODES.join('|')}>` }, { status: 400 });
        }
        setMode(source as SimulatorTarget | 'all', mode as SimulatorMode);
        return Response.json({ modes });
      }
      const route = ROUTES.get(path);
      // Skinbaron's one endpoint is a POST; every other upstream's a GET.
      if (!route || request.method !== (route[0] === 'skinbaron' ? 'POST' : 'GET')) return new Response('not found', { status: 404 });
      const [source, endpoint] = route;
      counts[source] += 1;
      last[source] = { url: request.url, headers: Object.fromEntries(request.headers) };
      const special = forMode(source, endpoint, request);
      if (special) return special;
      if (endpoint === 'skinport-sales') return skinportSales(url);
      if (source === 'skinport') return skinport(request, url);
      if (path === '/steam/market/search/render') return steamSearch(url, modes.steam);
      if (source === 'steam') return steam(url);
      if (source === 'csfloat') return csfloat(url);
      if (source === 'fx') return new Response(ecbDailyXml(seed, now(), modes.fx), { headers: { 'content-type': 'text/xml' } });
      if (source === 'skinbaron') {
        const refusal = await skinbaronRefusal(request);
        if (refusal) return refusal;
      }
      return marketplace(endpoint as MarketEndpoint, source, request, url);
    },
  });

  const port = server.port!;
  return {
    url: `http://${options.hostname ?? '127.0.0.1'}:${port}`,
    port,
    setMode,
    mode: (source) => modes[source],
    setRetryAfter(value) {
      retryAfter = value;
    },
    requestCount: (source) => counts[source],
    lastRequest: (source) => last[source],
    newItemsAt: newItems.newItemsAt,
    async stop() {
      for (const finish of [...stalled]) finish(new Response('simulator stopped', { status: 503 }));
      await server.stop(true);
    },
  };
}
