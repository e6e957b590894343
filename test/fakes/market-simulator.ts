import zlib from 'node:zlib';
import type { Server } from 'bun';
import { centsFromDecimal, withThousands } from '../../shared/sources/money.ts';

/**
 * Local market simulator (DESIGN 9, test/fakes/): one Bun.serve speaking the three upstream formats
 * the adapters read, over a given item list, so tests and `npm start` run with no internet.
 *
 *   /skinport/v1/items?app_id=730&currency=USD     bare array, one row per (name, version), brotli
 *   /steam/market/priceoverview/?appid=730&currency=1&market_hash_name=…
 *   /csfloat/api/v1/listings?limit=…&cursor=…      {data, cursor}, integer cents, limit ≤ 1000
 *   POST /_control/<source|all>/<mode>             switch a source's mode from another process
 *   GET  /_control                                 current modes
 *
 * Prices are deterministic in (seed, name, version, 30 s bucket of `now`) and drift slowly: each
 * price is a base (log-uniform within a range by item kind, times exterior / StatTrak / Souvenir /
 * phase multipliers) times exp(value noise at several time scales), so neighbouring buckets differ
 * by a fraction of a percent while hours and days move several percent. Each source adds its own
 * level and a little noise of its own. Money is written as upstream writes it: skinport JSON numbers
 * with two decimals as literal text (`2.30`), steam `"$1,234.56"`, csfloat integer cents.
 *
 * Modes per source: ok, fail (500), stall (never answers until stop or the client gives up),
 * rate_limit (429 + Retry-After, steam's body `null`), malformed (invalid JSON), partial (valid
 * JSON where every third row, index % 3 === 1, is broken in turn: missing name, price as a string,
 * negative price; for steam, every third request since the mode was set).
 */

export const SIMULATED_SOURCES = ['skinport', 'steam', 'csfloat'] as const;
export type SimulatedSource = (typeof SIMULATED_SOURCES)[number];
export const SIMULATOR_MODES = ['ok', 'fail', 'stall', 'rate_limit', 'malformed', 'partial'] as const;
export type SimulatorMode = (typeof SIMULATOR_MODES)[number];

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
 * skinport and steam; csfloat lists it in cents.
 */
export type FixedPrice =
  | string
  | {
      /** Lowest ask; null (or quantity 0) means nothing for sale. */
      price: string | null;
      median_price?: string | null;
      /** Skinport quantity, steam volume, csfloat listing count (default: generated, at least 1). */
      quantity?: number;
      /** csfloat only: the listing prices themselves (overrides price and quantity there). */
      listings?: readonly string[];
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
};

export type MarketSimulator = {
  url: string;
  port: number;
  setMode(source: SimulatedSource | 'all', mode: SimulatorMode): void;
  mode(source: SimulatedSource): SimulatorMode;
  /** The Retry-After header sent with 429s (default "30"); null sends none. */
  setRetryAfter(value: string | null): void;
  /** Requests received per source since start (any mode). */
  requestCount(source: SimulatedSource): number;
  /** The last request a source received: its URL and headers. */
  lastRequest(source: SimulatedSource): { url: string; headers: Record<string, string> } | undefined;
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

function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// ---------------------------------------------------------------------------------------------
// Item model

const PHASE_LABELS: Record<string, string> = {
  'phase-1': 'Phase 1',
  'phase-2': 'Phase 2',
  'phase-3': 'Phase 3',
  'phase-4': 'Phase 4',
  ruby: 'Ruby',
  sapphire: 'Sapphire',
  'black-pearl': 'Black Pearl',
  emerald: 'Emerald',
};
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
const SOURCE_LEVEL: Record<SimulatedSource, number> = { skinport: 0.93, steam: 1.12, csfloat: 0.96 };
const SOURCE_SALT: Record<SimulatedSource, number> = { skinport: 0x51, steam: 0x5e, csfloat: 0xcf };

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

type Fixed = { price: string | null; priceCents: number | null; median: string | null | undefined; quantity: number | undefined; listings: number[] | undefined };

type Entry = {
  item: SimulatorItem;
  name: string;
  version: string;
  /** Upstream phase label, null for `default`. */
  label: string | null;
  hash: number;
  base: number;
  fixed: Fixed | undefined;
  /** For the default entry of an item with phases: its phase entries (its price is their minimum). */
  phaseEntries: Entry[];
};

function normaliseFixed(name: string, version: string, value: FixedPrice): Fixed {
  const spec = typeof value === 'string' ? { price: value } : value;
  const cents = (decimal: string) => {
    const parsed = centsFromDecimal(decimal);
    if (parsed === null || parsed === 0) throw new Error(`simulator: fixed price ${decimal} for ${name} ${version} must be positive with at most two decimals`);
    return parsed;
  };
  return {
    price: spec.price,
    priceCents: spec.price === null ? null : cents(spec.price),
    median: spec.median_price,
    quantity: spec.quantity,
    listings: spec.listings?.map(cents),
  };
}

/** A price as both exact text and cents. */
type Quote = { text: string; cents: number };

function quoteFromCents(cents: number): Quote {
  const whole = Math.floor(cents / 100);
  return { text: `${whole}.${String(cents % 100).padStart(2, '0')}`, cents };
}

function steamMoney(decimal: string): string {
  const [whole = '0', fraction] = decimal.split('.');
  return `$${withThousands(whole)}${fraction === undefined ? '' : `.${fraction}`}`;
}

// ---------------------------------------------------------------------------------------------

export function startMarketSimulator(options: MarketSimulatorOptions): MarketSimulator {
  const seed = (options.seed ?? 1) >>> 0;
  const now = options.now ?? (() => new Date());
  const bucketMs = (options.bucketSeconds ?? 30) * 1000;
  const modes: Record<SimulatedSource, SimulatorMode> = { skinport: 'ok', steam: 'ok', csfloat: 'ok' };
  const counts: Record<SimulatedSource, number> = { skinport: 0, steam: 0, csfloat: 0 };
  const last: Partial<Record<SimulatedSource, { url: string; headers: Record<string, string> }>> = {};
  let retryAfter: string | null = '30';
  let steamPartialCounter = 0;
  const stalled = new Set<(response: Response) => void>();

  // Entries: every item's default, plus one per phase.
  const defaults: Entry[] = [];
  const byName = new Map<string, Entry>();
  const csfloatEntries: Entry[] = [];
  for (const item of options.items) {
    const name = item.market_hash_name;
    const fixedFor = (version: string) => {
      const value = options.prices?.[name]?.[version];
      return value === undefined ? undefined : normaliseFixed(name, version, value);
    };
    const makeEntry = (version: string): Entry => {
      const hash = hashString(`${name}\u0000${version}`, seed);
      return {
        item,
        name,
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
      if (entry.fixed.price === null || entry.fixed.quantity === 0) return null;
      return { text: entry.fixed.price, cents: entry.fixed.priceCents! };
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

  function skinportRow(entry: Entry, bucket: number, index: number, corrupt: boolean): string {
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
      `"quantity":${quantity},"created_at":${CREATED_EPOCH + (entry.hash % 150_000_000)},"updated_at":${Math.floor((moved * bucketMs) / 1000)}}`
    );
  }

  let skinportCache: { bucket: number; body: Uint8Array } | undefined;

  function skinportBody(partial: boolean): string {
    const bucket = bucketOf(now());
    const rows: string[] = [];
    for (const entry of defaults) {
      rows.push(skinportRow(entry, bucket, rows.length, partial && rows.length % 3 === 1));
      for (const phase of entry.phaseEntries) rows.push(skinportRow(phase, bucket, rows.length, partial && rows.length % 3 === 1));
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
    const bucket = bucketOf(now());
    let body: Uint8Array;
    if (!partial && skinportCache?.bucket === bucket) body = skinportCache.body;
    else {
      body = zlib.brotliCompressSync(Buffer.from(skinportBody(partial)), { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } });
      if (!partial) skinportCache = { bucket, body };
    }
    return new Response(body, { headers: { 'content-type': 'application/json; charset=utf-8', 'content-encoding': 'br', 'cache-control': 'public, max-age=300' } });
  }

  // ---- steam ---------------------------------------------------------------------------------

  function steam(url: URL): Response {
    const json = (text: string, status = 200) => new Response(text, { status, headers: { 'content-type': 'application/json; charset=utf-8' } });
    const name = url.searchParams.get('market_hash_name');
    if (url.searchParams.get('appid') !== '730' || url.searchParams.get('currency') !== '1' || !name) return json('{"success":false}', 400);
    const counter = steamPartialCounter;
    steamPartialCounter += 1;
    const entry = byName.get(name);
    if (!entry) return json('{"success":false}');
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

  // ---- csfloat -------------------------------------------------------------------------------

  // Every listing of the market as [entry index, slot], in one seeded shuffled order (pages mix items).
  const listingSlots: [number, number][] = [];
  for (const [index, entry] of csfloatEntries.entries()) {
    let count: number;
    if (entry.fixed) count = entry.fixed.listings?.length ?? (entry.fixed.price === null ? 0 : (entry.fixed.quantity ?? 1 + (entry.hash % 4)));
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
    if (entry.fixed) return entry.fixed.priceCents!;
    const cheapest = ask(entry, 'csfloat', bucket)!.cents;
    return slot === 0 ? cheapest : Math.round(cheapest * (1 + 0.015 * slot + 0.05 * unit(mix(entry.hash, slot, bucket))));
  }

  function listing(position: number, bucket: number, corrupt: boolean): Record<string, unknown> {
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
    const end = Math.min(offset + pageSize, listingSlots.length);
    const data: Record<string, unknown>[] = [];
    for (let position = offset; position < end; position += 1) data.push(listing(position, bucket, partial && position % 3 === 1));
    const body: Record<string, unknown> = { data };
    if (end < listingSlots.length) body.cursor = Buffer.from(`o${end}`).toString('base64url');
    return Response.json(body);
  }

  // ---- modes and routing ---------------------------------------------------------------------

  const MALFORMED: Record<SimulatedSource, string> = {
    skinport: '[{"market_hash_name":"AK-47 | Redline (Field-Tested)","version":null,"min_price":',
    steam: '{"success":tru',
    csfloat: '{"data":[{"id":"1","price":12',
  };
  const RATE_LIMITED_BODY: Record<SimulatedSource, string> = {
    skinport: '{"errors":[{"id":"rate_limit_exceeded","message":"Rate limit exceeded"}]}',
    steam: 'null',
    csfloat: '{"code":20,"message":"too many requests, try again later"}',
  };

  function forMode(source: SimulatedSource, request: Request): Response | Promise<Response> | null {
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
        return new Response(MALFORMED[source], { headers: { 'content-type': 'application/json; charset=utf-8' } });
      default:
        return null;
    }
  }

  function setMode(source: SimulatedSource | 'all', mode: SimulatorMode): void {
    for (const name of source === 'all' ? SIMULATED_SOURCES : [source]) modes[name] = mode;
    if (source === 'all' || source === 'steam') steamPartialCounter = 0;
  }

  const ROUTES: [string, SimulatedSource][] = [
    ['/skinport/v1/items', 'skinport'],
    ['/steam/market/priceoverview', 'steam'],
    ['/csfloat/api/v1/listings', 'csfloat'],
  ];

  const server: Server<undefined> = Bun.serve({
    port: options.port ?? 0,
    hostname: options.hostname ?? '127.0.0.1',
    // A stalled answer must stay stalled: no idle timeout closes it.
    idleTimeout: 0,
    fetch(request) {
      const url = new URL(request.url);
      const path = url.pathname.replace(/\/+$/, '');
      if (path.startsWith('/_control')) {
        if (request.method === 'GET' && path === '/_control') return Response.json({ modes, retry_after: retryAfter });
        const [, , source, mode] = path.split('/');
        if (request.method !== 'POST') return new Response(null, { status: 405 });
        if (!(source === 'all' || (SIMULATED_SOURCES as readonly string[]).includes(source ?? '')) || !(SIMULATOR_MODES as readonly string[]).includes(mode ?? '')) {
          return Response.json({ error: `use POST /_control/<${SIMULATED_SOURCES.join('|')}|all>/<${SIMULATOR_MODES.join('|')}>` }, { status: 400 });
        }
        setMode(source as SimulatedSource | 'all', mode as SimulatorMode);
        return Response.json({ modes });
      }
      const route = ROUTES.find(([prefix]) => path === prefix);
      if (!route || request.method !== 'GET') return new Response('not found', { status: 404 });
      const source = route[1];
      counts[source] += 1;
      last[source] = { url: request.url, headers: Object.fromEntries(request.headers) };
      const special = forMode(source, request);
      if (special) return special;
      if (source === 'skinport') return skinport(request, url);
      if (source === 'steam') return steam(url);
      return csfloat(url);
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
    async stop() {
      for (const finish of [...stalled]) finish(new Response('simulator stopped', { status: 503 }));
      await server.stop(true);
    },
  };
}
