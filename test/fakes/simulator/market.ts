/**
 * The market simulator's shared market (docs/design.md §9 and §13): the catalog's entries (each item's default
 * and one per phase) and the price walk every upstream reads. Each upstream's file writes these
 * prices in its own format.
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
 */

import { PHASE_LABELS as CATALOG_PHASE_LABELS } from '../../../shared/catalog/identity.ts';
import { SOURCE_NAMES } from '../../../shared/platform/source-names.ts';
import { centsFromDecimal } from '../../../shared/sources/money.ts';
import { type NewItemSchedule, newItemSchedule } from './new-items.ts';
import { drift, hashString, mix, unit } from './noise.ts';
import {
  ABSENT_SHARE,
  BODY_SOURCES,
  type BodySource,
  type FixedPrice,
  type MarketSimulatorOptions,
  type SimulatedSource,
  type SimulatorItem,
} from './types.ts';

// ---------------------------------------------------------------------------------------------
// Item model

export const PHASE_LABELS: Readonly<Record<string, string>> = CATALOG_PHASE_LABELS;
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
export const EXTERIORS: Record<string, { multiplier: number; wear: [number, number] }> = {
  'Factory New': { multiplier: 1.7, wear: [0, 0.07] },
  'Minimal Wear': { multiplier: 1.25, wear: [0.07, 0.15] },
  'Field-Tested': { multiplier: 1, wear: [0.15, 0.38] },
  'Well-Worn': { multiplier: 0.85, wear: [0.38, 0.45] },
  'Battle-Scarred': { multiplier: 0.75, wear: [0.45, 1] },
};
export const SOURCE_LEVEL: Record<SimulatedSource, number> = {
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
export const SOURCE_SALT: Record<SimulatedSource, number> = {
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

export function phaseVersion(phase: string): string {
  const normalised = phase.trim().toLowerCase().replace(/\s+/g, '-');
  if (!(normalised in PHASE_LABELS)) throw new Error(`simulator: unknown phase ${phase}`);
  return normalised;
}

export function exteriorOf(name: string): string | null {
  const match = /\(([^()]+)\)\s*$/.exec(name);
  return match && match[1]! in EXTERIORS ? match[1]! : null;
}

/** A plausible USD level for an item, by kind (from its market_hash_name), before drift. */
export function basePrice(name: string, h: number, version: string): number {
  const u = unit(h);
  const logUniform = (lo: number, hi: number, skew: number) => lo * (hi / lo) ** (u ** skew);
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
export type Pin = { text: string; mills: number; cents: number | null };

export type Fixed = {
  price: string | null;
  priceCents: number | null;
  median: string | null | undefined;
  quantity: number | undefined;
  listings: number[] | undefined;
  bid: Pin | null | undefined;
  volume7d: number | null | undefined;
  sources: Partial<Record<SimulatedSource, Pin | null>>;
};

export type Entry = {
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

export function normaliseFixed(name: string, version: string, value: FixedPrice): Fixed {
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
      throw new Error(
        `simulator: fixed ${source} price ${decimal} for ${name} ${version} must be positive with at most ${centsSource ? 'two' : 'three'} decimals`,
      );
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
export function pinFor(fixed: Fixed, source: SimulatedSource): Pin | null {
  if (fixed.quantity === 0) return null;
  const override = fixed.sources[source];
  if (override !== undefined) return override;
  return fixed.price === null ? null : { text: fixed.price, mills: fixed.priceCents! * 10, cents: fixed.priceCents };
}

/** A price as both exact text and cents. */
export type Quote = { text: string; cents: number };

export function quoteFromCents(cents: number): Quote {
  const whole = Math.floor(cents / 100);
  return { text: `${whole}.${String(cents % 100).padStart(2, '0')}`, cents };
}

// ---------------------------------------------------------------------------------------------
// The market over the simulator's items

/** A marketplace ask: thousandths of USD, the pinned text (null when generated), the bucket it last moved in (0 for a pin). */
export type MarketQuote = { mills: number; pin: string | null; moved: number };

export type Market = {
  seed: number;
  now: () => Date;
  bucketMs: number;
  bucketOf(at: Date): number;
  /** Every item's default entry (its phases in phaseEntries), in options.items order, then the new items. */
  defaults: Entry[];
  byName: Map<string, Entry>;
  /** The entries CSFloat lists (a Doppler's phases, never its default). */
  csfloatEntries: Entry[];
  /** Entries made (defaults and phases): the marketplaces' memo size. */
  entryCount: number;
  newItems: NewItemSchedule;
  /** The last bucket at or before `bucket` in which this entry's market moved in `source`. */
  changeBucket(entry: Entry, source: SimulatedSource, bucket: number): number;
  /** The lowest ask of an entry in skinport, steam or csfloat at a bucket, or null when nothing is for sale. */
  ask(entry: Entry, source: SimulatedSource, bucket: number): Quote | null;
  /** Generated listing/volume count in skinport, steam or csfloat; 0 means nothing for sale there. */
  generatedQuantity(entry: Entry, source: SimulatedSource, cents: number): number;
  /** The lowest ask of an entry in a marketplace (the six and skinbaron), or null when it has none for sale there. */
  marketAsk(entry: Entry, source: BodySource, bucket: number): MarketQuote | null;
  /** Listings behind a marketplace ask. */
  marketCount(entry: Entry, source: BodySource, quote: MarketQuote): number;
};

export function createMarket(options: MarketSimulatorOptions): Market {
  const seed = (options.seed ?? 1) >>> 0;
  const now = options.now ?? (() => new Date());
  const bucketMs = (options.bucketSeconds ?? 30) * 1000;

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

  // ---- the six marketplaces (docs/design.md §13) and skinbaron (docs/design.md §14) ---------------------------

  /** Each marketplace's fixed per-item bias, at most ±4 % (log), beside its level and its own drift. */
  const ITEM_BIAS = 0.04;
  /** Generated asks in whole cents (bitskins: thousandths that are whole cents); csmarket and waxpeer to the thousandth. */
  const WHOLE_CENTS: Record<BodySource, boolean> = {
    csmarket: false,
    lisskins: true,
    waxpeer: false,
    whitemarket: true,
    bitskins: true,
    csdeals: true,
    skinbaron: true,
  };
  /** Listing depth relative to skinport's (counts are 1 + v³ × cap × depth). */
  const DEPTH: Record<BodySource, number> = { csmarket: 1, lisskins: 0.6, waxpeer: 0.5, whitemarket: 0.25, bitskins: 0.35, csdeals: 1, skinbaron: 0.4 };

  /** Per marketplace and entry id: the bucket last asked (NaN: never), the bucket its price last moved in, the price. */
  const marketMemo = Object.fromEntries(
    BODY_SOURCES.map((source) => [
      source,
      { asked: new Float64Array(entryCount).fill(NaN), moved: new Float64Array(entryCount), mills: new Float64Array(entryCount) },
    ]),
  ) as Record<BodySource, { asked: Float64Array; moved: Float64Array; mills: Float64Array }>;

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

  return {
    seed,
    now,
    bucketMs,
    bucketOf,
    defaults,
    byName,
    csfloatEntries,
    entryCount,
    newItems,
    changeBucket,
    ask,
    generatedQuantity,
    marketAsk,
    marketCount,
  };
}
