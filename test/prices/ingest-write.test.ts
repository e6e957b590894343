import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../../shared/catalog/identity.ts';
import { claimIngestRun, type ListingUpdate, mapToCatalog, type StagedObservation, writeIngestRun } from '../../shared/prices/ingest.ts';
import { createTestApp, scratchTestApp, type TestApp, workspaceWithKey } from '../helpers.ts';
import { retireEndpoints, subscribedEndpoint } from '../webhooks/webhooks-fixtures.ts';

const t = createTestApp();
const sql = t.deps.sql;
afterAll(() => t.close());

describe('mapToCatalog', () => {
  test('counts unknown names and versions, and keeps the cheapest ask per item and version', () => {
    const catalog = new Map([
      ['Known', { catalogId: 'itm_known', phases: [] as string[] }],
      ['★ Karambit | Doppler (Factory New)', { catalogId: 'itm_doppler', phases: ['ruby', 'phase-2'] }],
    ]);
    const at = new Date('2026-01-01T00:00:00Z');
    const row = (name: string, version: string, price: string) => ({
      market_hash_name: name,
      version,
      price,
      median_price: null,
      bid: null,
      volume_7d: null,
      quantity: 1,
      source_time: at,
    });
    const mapped = mapToCatalog(
      [
        row('Known', 'default', '2.50'),
        row('Known', 'default', '2.4'),
        row('Known', 'default', '10.00'),
        row('Unknown thing', 'default', '1'),
        row('★ Karambit | Doppler (Factory New)', 'ruby', '900.10'),
        row('★ Karambit | Doppler (Factory New)', 'sapphire', '1200'),
        row('Known', 'ruby', '3'),
      ],
      catalog,
    );
    expect(mapped.unknownNames).toEqual(['Unknown thing']);
    expect(mapped.unknownVersions).toBe(2);
    expect(mapped.staged.map((staged) => [staged.catalog_id, staged.version, staged.price])).toEqual([
      ['itm_known', 'default', '2.4'],
      ['itm_doppler', 'ruby', '900.10'],
    ]);
  });
});

describe('writeIngestRun', () => {
  test('stores only what changed: a repeat moves freshness but is neither stored nor sampled; price.updated only on change', async () => {
    const name = `Ingest Write ${crypto.randomUUID()}`;
    const catalogId = catalogIdFor(name);
    const source = `unit_${crypto.randomUUID().slice(0, 8)}`;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'sticker')`;
    // price.updated is written only while an endpoint subscribes to it.
    const ws = await workspaceWithKey(t);
    await subscribedEndpoint(sql, ws.workspace.id, ['price.updated']);
    const run = async (slot: number, price: string, sourceTime: string, quantity = 3) => {
      const runId = (await claimIngestRun(sql, source, slot, new Date()))!;
      const rows: StagedObservation[] = [{ catalog_id: catalogId, version: 'default', price, median_price: null, quantity, source_time: new Date(sourceTime) }];
      return writeIngestRun(sql, { runId, source, rows, ingestedAt: new Date(), staleAfterSeconds: 90, received: 1, skipped: 0, unknownNames: 0 });
    };
    const latestSourceTime = async () =>
      (
        await sql<{ source_time: Date }[]>`select source_time from latest_prices where catalog_id = ${catalogId} and source = ${source}`
      )[0]!.source_time.toISOString();
    const slotStart = new Date();
    expect(await claimIngestRun(sql, source, 1, slotStart)).not.toBeNull();
    expect(await claimIngestRun(sql, source, 1, slotStart, new Date(slotStart.getTime() + 5))).toBeNull();

    expect(await run(2, '5.00', '2026-03-01T10:01:00Z')).toMatchObject({ written: 1, repeated: 0, changed: 1 });
    // The same observation again (same source time) is not newer: nothing happens.
    expect(await run(3, '5.00', '2026-03-01T10:01:00Z')).toMatchObject({ written: 0, repeated: 0, changed: 0 });
    // Identical but newer: the source confirmed its price. Only the latest row's freshness moves.
    expect(await run(4, '5.00', '2026-03-01T10:03:00Z')).toMatchObject({ written: 0, repeated: 1, changed: 0 });
    expect(await latestSourceTime()).toBe('2026-03-01T10:03:00.000Z');
    // Another quantity at the same price is an observation (and a sample), not a price change.
    expect(await run(5, '5.00', '2026-03-01T10:04:00Z', 4)).toMatchObject({ written: 1, repeated: 0, changed: 0 });
    // "5.0" is the same amount but not the same observation: upstream's text is kept as sent.
    expect(await run(6, '5.0', '2026-03-01T10:05:00Z', 4)).toMatchObject({ written: 1, repeated: 0, changed: 0 });
    expect(await run(7, '7.25', '2026-03-01T10:06:00Z', 4)).toMatchObject({ written: 1, changed: 1 });
    expect(await run(8, '4.10', '2026-03-01T10:12:00Z', 4)).toMatchObject({ written: 1, changed: 1 });

    const [observations] = await sql<
      { count: number }[]
    >`select count(*)::int as count from price_observations where catalog_id = ${catalogId} and source = ${source}`;
    expect(observations!.count).toBe(5);
    const events = await sql<{ payload: { price: string; previous_price: string | null } }[]>`
      select payload from event_outbox where payload->>'catalog_id' = ${catalogId} and payload->>'source' = ${source} order by created_at`;
    expect(events.map((event) => [event.payload.previous_price, event.payload.price])).toEqual([
      [null, '5.00'],
      ['5.0', '7.25'],
      ['7.25', '4.10'],
    ]);

    const rollups = await sql<{ granularity: string; bucket_start: Date; open: string; high: string; low: string; close: string; samples: number }[]>`
      select granularity, bucket_start, open::text, high::text, low::text, close::text, samples from price_rollups
      where catalog_id = ${catalogId} and source = ${source} order by granularity, bucket_start`;
    expect(
      rollups.map((bucket) => [bucket.granularity, bucket.bucket_start.toISOString(), bucket.open, bucket.high, bucket.low, bucket.close, bucket.samples]),
    ).toEqual([
      ['10m', '2026-03-01T10:00:00.000Z', '5.00', '7.25', '5.00', '7.25', 4],
      ['10m', '2026-03-01T10:10:00.000Z', '4.10', '4.10', '4.10', '4.10', 1],
      ['daily', '2026-03-01T00:00:00.000Z', '5.00', '7.25', '4.10', '4.10', 5],
      ['hourly', '2026-03-01T10:00:00.000Z', '5.00', '7.25', '4.10', '4.10', 5],
    ]);
    const [health] = await sql<
      { last_rows_written: number; consecutive_failures: number }[]
    >`select last_rows_written, consecutive_failures from price_sources where name = ${source}`;
    expect(health).toEqual({ last_rows_written: 1, consecutive_failures: 0 });

    await retireEndpoints(sql, [ws.workspace.id]);
    await sql`delete from price_sources where name = ${source}`;
    await sql`delete from latest_prices where catalog_id = ${catalogId}`;
  });

  test('a whole-market listing confirms its listed rows once, on the source: only changes, exits and returns touch rows', async () => {
    const names = [0, 1, 2].map((index) => `Listing ${index} ${crypto.randomUUID()}`);
    const [a, b, c] = names.map((name) => catalogIdFor(name)) as [string, string, string];
    for (const [index, name] of names.entries()) {
      await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${[a, b, c][index]!}, ${name}, 'sticker')`;
    }
    const source = `listing_${crypto.randomUUID().slice(0, 8)}`;
    const row = (catalogId: string, price: string, at: Date, bid: string | null = null): StagedObservation => ({
      catalog_id: catalogId,
      version: 'default',
      price,
      median_price: null,
      bid,
      volume_7d: null,
      quantity: 2,
      source_time: at,
    });
    let slot = 0;
    const run = async (ingestedAt: Date, rows: StagedObservation[], listing: ListingUpdate) => {
      const runId = (await claimIngestRun(sql, source, (slot += 1), ingestedAt))!;
      return writeIngestRun(sql, { runId, source, rows, ingestedAt, staleAfterSeconds: 90, received: rows.length, skipped: 0, unknownNames: 0, listing });
    };
    const stored = async () =>
      Object.fromEntries(
        (
          await sql<{ catalog_id: string; price: string; listed: boolean; raw_time: Date; source_time: Date; run_id: string }[]>`
            select c.catalog_id, c.price::text as price, c.listed, l.source_time as raw_time, c.source_time, c.run_id
            from current_prices c join latest_prices l using (catalog_id, source, version)
            where c.source = ${source} order by c.catalog_id`
        ).map((entry) => [entry.catalog_id, entry]),
      );
    const t0 = new Date('2026-03-01T10:00:00.000Z');
    const t1 = new Date('2026-03-01T10:00:30.000Z');
    const t2 = new Date('2026-03-01T10:01:00.000Z');
    const t3 = new Date('2026-03-01T10:01:30.000Z');

    // A complete listing of a and b.
    expect(await run(t0, [row(a, '1.000', t0), row(b, '2.000', t0, '1.9')], { complete: true, delisted: [] })).toMatchObject({ written: 2, changed: 2 });
    const first = await stored();
    // Listed again, a unchanged and b moved: a's row is not rewritten, yet reads as observed at t1.
    expect(await run(t1, [row(a, '1.000', t1), row(b, '2.100', t1, '1.9')], { complete: true, delisted: [] })).toMatchObject({
      written: 1,
      repeated: 0,
      changed: 1,
    });
    let now = await stored();
    expect(now[a]).toMatchObject({ listed: true, raw_time: t0, source_time: t1, run_id: first[a]!.run_id });
    expect(now[b]).toMatchObject({ price: '2.100', listed: true, raw_time: t1, source_time: t1 });

    // An incremental listing (unchanged rows left out) that says a has left: a keeps its last time.
    expect(await run(t2, [], { complete: false, delisted: [{ catalog_id: a, version: 'default' }] })).toMatchObject({ written: 0, changed: 0 });
    now = await stored();
    expect(now[a]).toMatchObject({ listed: false, source_time: t0 });
    expect(now[b]).toMatchObject({ listed: true, source_time: t2 });

    // A complete listing with a back (same price) and c new, b gone: a is listed again from t3.
    expect(await run(t3, [row(a, '1.000', t3), row(c, '3.000', t3)], { complete: true, delisted: [] })).toMatchObject({ written: 1, repeated: 1, changed: 1 });
    now = await stored();
    expect(now[a]).toMatchObject({ listed: true, raw_time: t3, source_time: t3 });
    expect(now[b]).toMatchObject({ listed: false, source_time: t1 });
    expect(now[c]).toMatchObject({ listed: true, source_time: t3 });
    const [health] = await sql<{ listed_at: Date }[]>`select listed_at from price_sources where name = ${source}`;
    expect(health!.listed_at).toEqual(t3);
  });
});

describe('price events are written for their subscribers only', () => {
  // A database of its own: whether any endpoint subscribes is global state.
  let scratch: TestApp;
  beforeAll(async () => {
    scratch = await scratchTestApp({ tag: 'ingest_events' });
  }, 30_000);
  afterAll(() => scratch?.close());

  test('without a subscriber a run writes no price event; each type once an endpoint subscribes to it', async () => {
    const db = scratch.deps.sql;
    const names = Array.from({ length: 3 }, (_, index) => `Ingest Events ${index}`);
    await db`insert into catalog_items (catalog_id, market_hash_name, type) select * from unnest(${names.map(catalogIdFor)}::text[], ${names}::text[], ${names.map(() => 'sticker')}::text[])`;
    let slot = 0;
    const run = async (cents: number) => {
      const at = new Date();
      const runId = (await claimIngestRun(db, 'skinport', (slot += 1), at))!;
      const rows = names.map((name) => ({
        catalog_id: catalogIdFor(name),
        version: 'default',
        price: (cents / 100).toFixed(2),
        median_price: null,
        quantity: 1,
        source_time: at,
      }));
      const result = await writeIngestRun(db, {
        runId,
        source: 'skinport',
        rows,
        ingestedAt: at,
        staleAfterSeconds: 90,
        received: 3,
        skipped: 0,
        unknownNames: 0,
      });
      expect(result.changed).toBe(3);
      const counts = await db<{ event_type: string; count: number }[]>`
        select event_type, count(*)::int as count from event_outbox where created_at = ${at} group by 1 order by 1`;
      return Object.fromEntries(counts.map((row) => [row.event_type, row.count]));
    };
    expect(await run(100)).toEqual({});
    const ws = await workspaceWithKey(scratch);
    await subscribedEndpoint(db, ws.workspace.id, ['prices.updated']);
    expect(await run(200)).toEqual({ 'prices.updated': 1 });
    await subscribedEndpoint(db, ws.workspace.id, ['price.updated', 'render.completed']);
    expect(await run(300)).toEqual({ 'price.updated': 3, 'prices.updated': 1 });
    // A deleted or disabled endpoint subscribes to nothing.
    await db`update webhook_endpoints set disabled_at = now() where event_types @> '{price.updated}'`;
    await db`update webhook_endpoints set deleted_at = now() where event_types @> '{prices.updated}'`;
    expect(await run(400)).toEqual({});
  });
});
