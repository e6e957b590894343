import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { CompatPriceGatherer, gatheredCompatDataset, readCompatDataset, readCompatSales } from '../../shared/compat/dataset.ts';
import { COMPAT_BUILDERS, createCompatBuilders } from '../../shared/compat/registry.ts';
import { COMPAT_DOCUMENTS, type CompatDataset, documentText } from '../../shared/compat/types.ts';
import { createSql } from '../../shared/platform/db.ts';
import { buildPriceSnapshot } from '../../shared/prices/snapshot.ts';
import { scratchTestApp, type TestApp } from '../helpers.ts';

/**
 * The drop-in formats' dataset built incrementally (shared/compat/dataset.ts): each snapshot's build
 * keeps the last build's object for an item whose rows did not change, and a changed item's unchanged
 * source prices; the format builders keep texts by those objects. Over rounds of random changes of
 * every kind a run or a sales read makes (prices, quantities, source times, a listing moving every
 * listed row's time, rows gone, a source gone stale, windows changed, items with windows and no
 * price), the gathered dataset must equal one read
 * afresh, and every document built from it must equal the document built from a copy no build has seen.
 * A database of its own: the suite owns every price in it.
 */

let t: TestApp;
const SOURCES = ['skinport', 'steam', 'csfloat', 'waxpeer'] as const;
const WINDOWS = ['24h', '7d', '30d', '90d'] as const;
const items = Array.from({ length: 24 }, (_, index) => ({
  name: index % 6 === 0 ? `★ Karambit | Doppler (Factory New) #${index}` : `Test Rifle ${String(index).padStart(2, '0')} | Finish (Field-Tested)`,
  phases: index % 6 === 0 ? ['phase-2', 'ruby'] : [],
}));

/** A deterministic pseudo-random sequence (mulberry32), so a failure replays. */
function random(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

beforeAll(async () => {
  t = await scratchTestApp({ tag: 'compat_dataset' });
  for (const item of items) {
    await t.deps
      .sql`insert into catalog_items (catalog_id, market_hash_name, type, phases) values (${catalogIdFor(item.name)}, ${item.name}, 'weapon', ${item.phases})`;
  }
});
afterAll(async () => {
  await t?.close();
});

describe('the dataset built incrementally', () => {
  test('equals a fresh read after every kind of change, and its documents equal those built from scratch', async () => {
    const sql = t.deps.sql;
    const next = random(20261129);
    const pick = <T>(values: readonly T[]): T => values[Math.floor(next() * values.length)]!;
    const money = () => (1 + Math.floor(next() * 90_000) / 100).toFixed(2);
    let clock = Date.parse('2026-11-29T00:00:00Z');

    const setPrice = async (name: string, source: string, version: string, at: Date) => {
      await sql`
        insert into latest_prices (catalog_id, source, version, price, median_price, bid, volume_7d, quantity, source_time, ingested_at, run_id)
        values (${catalogIdFor(name)}, ${source}, ${version}, ${money()}::numeric, ${next() < 0.5 ? money() : null}::numeric,
                ${next() < 0.3 ? money() : null}::numeric, ${next() < 0.3 ? Math.floor(next() * 50) : null}, ${next() < 0.8 ? Math.floor(next() * 400) : null},
                ${at}, ${at}, ${crypto.randomUUID()})
        on conflict (catalog_id, version, source) do update
          set price = excluded.price, median_price = excluded.median_price, bid = excluded.bid, volume_7d = excluded.volume_7d,
              quantity = excluded.quantity, source_time = excluded.source_time, ingested_at = excluded.ingested_at`;
    };
    const setWindow = async (name: string, version: string, at: Date, source?: string) => {
      const window = pick(WINDOWS);
      const sold = next() < 0.8;
      const [median, low, high] = [money(), '0.50', '999.00'];
      await sql`
        insert into source_sales (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
        values (${catalogIdFor(name)}, ${version}, ${source ?? pick(['skinport', 'steam'])}, ${window}, ${sold ? median : null}::numeric, ${sold ? median : null}::numeric,
                ${sold ? low : null}::numeric, ${sold ? high : null}::numeric, ${sold ? 1 + Math.floor(next() * 90) : 0}, ${at}, ${at}, 'dataset-test')
        on conflict (catalog_id, version, sales_window, source) do update set median = excluded.median, volume = excluded.volume, source_time = excluded.source_time`;
      await sql`
        insert into item_sales (catalog_id, version, sales_window, median, mean, min, max, volume, sources, updated_at)
        values (${catalogIdFor(name)}, ${version}, ${window}, ${median}::numeric, ${median}::numeric, ${low}::numeric, ${high}::numeric, 7, ${['skinport']}, ${at})
        on conflict (catalog_id, version, sales_window) do update set median = excluded.median, updated_at = excluded.updated_at`;
    };
    const versionsOf = (item: (typeof items)[number]) => ['default', ...item.phases];

    // Every price of the first half of the items, from every source; windows on a few, and on items with no price.
    const start = new Date(clock);
    for (const item of items.slice(0, 18))
      for (const source of SOURCES) for (const version of versionsOf(item)) await setPrice(item.name, source, version, start);
    for (const item of items.slice(12)) await setWindow(item.name, 'default', start);
    for (const source of SOURCES) {
      await sql`insert into price_sources (name, last_success_at, stale_after_seconds) values (${source}, ${start}, 900)
                on conflict (name) do update set last_success_at = excluded.last_success_at, stale_after_seconds = 900`;
    }

    const keptObjects: number[] = [];
    const lastTexts = new Map<string, string>();
    let unchangedSeen = 0;
    let previous: CompatDataset | null = null;
    for (let round = 0; round < 12; round += 1) {
      clock += 60_000;
      const at = new Date(clock);
      // One run's worth of changes: a source's prices (some rows), a quantity or time alone, a row gone.
      // A whole-market listing confirms every listed row of its source at once: their times all move
      // (current_prices reads price_sources.listed_at), with or without a price changed. Round 9 is
      // such a listing alone: no value changes, every time of its source does.
      const source = round === 9 ? 'skinport' : pick(SOURCES);
      const listingOnly = round === 9;
      for (const item of items) {
        if (!listingOnly && next() < 0.25) await setPrice(item.name, source, pick(versionsOf(item)), at);
      }
      if (listingOnly || round % 3 === 0) await sql`update price_sources set listed_at = ${at} where name = ${source}`;
      const [row] = await sql<
        { catalog_id: string; version: string; source: string }[]
      >`select catalog_id, version, source from latest_prices order by random() limit 1`;
      if (round % 3 === 1 && row && !listingOnly)
        await sql`delete from latest_prices where catalog_id = ${row.catalog_id} and version = ${row.version} and source = ${row.source}`;
      if (round % 4 === 2 && !listingOnly)
        await sql`update latest_prices set quantity = coalesce(quantity, 0) + 1 where source = ${source} and catalog_id = ${catalogIdFor(pick(items).name)}`;
      if (round % 4 === 3 && !listingOnly)
        await sql`update latest_prices set source_time = ${at} where source = ${source} and catalog_id = ${catalogIdFor(pick(items).name)}`;
      // A sales read every few rounds; a source that stops succeeding turns its prices stale.
      // An item whose prices are all gone is left with its windows (and one with only windows changes them next).
      if (round === 7) await sql`delete from latest_prices where catalog_id = ${catalogIdFor(items[13]!.name)}`;
      // An item whose price and windows change in one round: built anew, with the new windows.
      // And a listing in the same round: items whose windows changed while their rows moved only in time.
      if (round % 5 === 4 && !listingOnly) {
        await setWindow(items[14]!.name, 'default', at);
        await setPrice(items[14]!.name, 'steam', 'default', at);
        await sql`update price_sources set listed_at = ${at} where name = 'steam'`;
        await setWindow(items[15]!.name, 'default', at, 'steam');
      }
      if (round % 5 === 4 && !listingOnly) for (const item of [items[20]!, items[13]!, pick(items), pick(items)]) await setWindow(item.name, 'default', at);
      if (round === 6) await sql`update price_sources set last_success_at = ${new Date(clock - 86_400_000)} where name = 'csfloat'`;
      for (const name of SOURCES) if (name !== 'csfloat' || round < 6) await sql`update price_sources set last_success_at = ${at} where name = ${name}`;

      const gatherer = new CompatPriceGatherer(sql);
      await buildPriceSnapshot(sql, at, { onItem: gatherer.onItem });
      const gathered = await gatheredCompatDataset(sql, gatherer, at);
      // Read afresh by a client no build has used: nothing kept from earlier rounds.
      const fresh = createSql(t.deps.config.DATABASE_URL, { max: 1, application: 'compat-dataset-test' });
      try {
        expect(gathered).toEqual(await readCompatDataset(fresh, at));
      } finally {
        await fresh.end({ timeout: 5 });
      }
      // The process's builders keep texts from round to round; a new set writes every text.
      const scratch = createCompatBuilders();
      for (const name of COMPAT_DOCUMENTS) {
        const built = COMPAT_BUILDERS[name](gathered);
        const text = documentText(built);
        const fromScratch = scratch[name](structuredClone(gathered));
        expect({ round, name, text }).toEqual({ round, name, text: documentText(fromScratch) });
        // Its age too: a kept text's oldest source time is taken anew from the item's times.
        expect({ round, name, oldest: built.oldest_source_ms }).toEqual({ round, name, oldest: fromScratch.oldest_source_ms });
        // A listing that changed no value leaves the price files' bytes as they were (their times are not in them).
        if (listingOnly && name === 'csgotrader-prices') expect(built.unchanged).toBe(true);
        // A document said to be unchanged is the bytes of the last round's.
        if (built.unchanged) expect({ round, name, text }).toEqual({ round, name, text: lastTexts.get(name)! });
        unchangedSeen += built.unchanged ? 1 : 0;
        lastTexts.set(name, text);
      }
      if (previous) {
        const before = new Map(previous.items.map((item) => [item.market_hash_name, item]));
        keptObjects.push(gathered.items.filter((item) => before.get(item.market_hash_name) === item).length);
      }
      previous = gathered;
    }
    // The rounds kept most items' objects (the reuse the builds rely on), and rebuilt some.
    expect(keptObjects.some((count) => count > 0)).toBe(true);
    expect(keptObjects.some((count) => count < items.length)).toBe(true);
    expect(unchangedSeen).toBeGreaterThan(0);
  }, 60_000);

  test('a sales read keeps the window objects whose text did not change, and an entry whose every window stands', async () => {
    const sql = t.deps.sql;
    const at = new Date('2026-11-30T00:00:00Z');
    const [still, moved] = [items[22]!, items[23]!];
    for (const item of [still, moved]) {
      await sql`
        insert into source_sales (catalog_id, version, source, sales_window, median, mean, min, max, volume, source_time, ingested_at, run_id)
        values (${catalogIdFor(item.name)}, 'default', 'skinport', '7d', 2.50, 2.60, 2.00, 3.00, 5, ${at}, ${at}, 'reuse-test'),
               (${catalogIdFor(item.name)}, 'default', 'steam', '24h', 2.40, null, null, null, 9, ${at}, ${at}, 'reuse-test')
        on conflict (catalog_id, version, sales_window, source) do update set volume = excluded.volume, source_time = excluded.source_time`;
    }
    const entry = (read: Awaited<ReturnType<typeof readCompatSales>>, name: string) =>
      read.entries.find((candidate) => candidate.market_hash_name === name && candidate.version === 'default')!;
    const first = await readCompatSales(sql);
    await sql`update source_sales set volume = volume + 1 where catalog_id = ${catalogIdFor(moved.name)} and source = 'skinport'`;
    const second = await readCompatSales(sql);
    expect(second.generation).not.toBe(first.generation);
    // Nothing of `still` changed: the same entry (and so the same item and texts downstream).
    expect(entry(second, still.name)).toBe(entry(first, still.name));
    // `moved`'s skinport windows changed, its steam windows did not (a format reading only steam keeps its text).
    expect(entry(second, moved.name)).not.toBe(entry(first, moved.name));
    expect(entry(second, moved.name).sales.steam).toBe(entry(first, moved.name).sales.steam!);
    expect(entry(second, moved.name).sales.skinport).not.toBe(entry(first, moved.name).sales.skinport!);
    expect(entry(second, moved.name).sales.skinport!['7d']).toEqual({
      median: '2.50',
      mean: '2.60',
      min: '2.00',
      max: '3.00',
      volume: 6,
      source_time_ms: at.getTime(),
    });
    expect(entry(second, moved.name).sales.steam!['24h']).toEqual({
      median: '2.40',
      mean: null,
      min: null,
      max: null,
      volume: 9,
      source_time_ms: at.getTime(),
    });
  });
});
