import type { SimulatorItem } from './types.ts';

/**
 * docs/design.md §19: "every so often a new item that the catalog lacks". A new item is a simulator item that
 * is off the market until its time, then listed like any other: in skinport's /v1/items, in steam's
 * priceoverview, and in the marketplace bodies (where, as for any item, each marketplace's seeded
 * absent share may leave it out; a pinned price lists it everywhere). CSFloat's listings are laid out
 * once at start, so new items never appear there.
 *
 * Other endpoints (Steam's search pages) can ask `isListed(item, bucket)` or `newItemsAt(now)`.
 */
export type NewSimulatorItem = SimulatorItem & {
  /** When it first appears on the market. */
  appearsAt?: Date;
  /** Or: how many price buckets after the simulator starts (default 0: at once). */
  afterBuckets?: number;
};

/**
 * For `npm start` (test/fakes/processes.ts): real market names that @ianlucas/cs2-lib 7.33 lacks,
 * appearing a few minutes apart (30 s buckets), and one name no parser reads into an item (an
 * operation pass), which stays counted in /metrics and GET /v2/status.
 */
export const DEFAULT_NEW_ITEMS: readonly NewSimulatorItem[] = [
  { market_hash_name: 'Austin 2025 Inferno Souvenir Highlight Package', phases: [], afterBuckets: 6 },
  { market_hash_name: 'Souvenir Charm | Cologne 2026 Highlight | MATYS ACE', phases: [], afterBuckets: 12 },
  { market_hash_name: 'Sticker | zorte (Gold, Ranked) | Cologne 2026', phases: [], afterBuckets: 20 },
  { market_hash_name: 'Souvenir MAC-10 | Tornado (Battle-Scarred)', phases: [], afterBuckets: 30 },
  { market_hash_name: 'Operation Hydra Access Pass', phases: [], afterBuckets: 40 },
];

export type NewItemSchedule = {
  /** Every new item, to be added to the simulator's items. */
  items: readonly NewSimulatorItem[];
  /** Whether `item` is on the market in `bucket` (an item that is not new always is). */
  isListed(item: SimulatorItem, bucket: number): boolean;
  /** The new items on the market at `now`. */
  newItemsAt(now: Date): NewSimulatorItem[];
};

/** The appearance bucket of each new item, from the simulator's start bucket and bucket length. */
export function newItemSchedule(items: readonly NewSimulatorItem[] | undefined, startBucket: number, bucketMs: number): NewItemSchedule {
  const list = items ?? [];
  const appears = new Map<SimulatorItem, number>();
  for (const item of list) {
    appears.set(item, item.appearsAt ? Math.floor(item.appearsAt.getTime() / bucketMs) : startBucket + (item.afterBuckets ?? 0));
  }
  const isListed = (item: SimulatorItem, bucket: number) => {
    if (appears.size === 0) return true;
    const from = appears.get(item);
    return from === undefined || bucket >= from;
  };
  return {
    items: list,
    isListed,
    newItemsAt: (now) => list.filter((item) => isListed(item, Math.floor(now.getTime() / bucketMs))),
  };
}
