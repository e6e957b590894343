import { afterAll, describe, expect, test } from 'bun:test';
import { catalogIdFor } from '../shared/catalog/identity.ts';
import { claimIngestRun, ensureObservationPartitions, mapToCatalog, writeIngestRun, type StagedObservation } from '../shared/prices/ingest.ts';
import { createTestApp } from './helpers.ts';

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
    const row = (name: string, version: string, price: string) => ({ market_hash_name: name, version, price, median_price: null, quantity: 1, source_time: at });
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
  test('skips repeated observations, emits price.updated only on change, and merges rollup buckets', async () => {
    const name = `Ingest Write ${crypto.randomUUID()}`;
    const catalogId = catalogIdFor(name);
    const source = `unit_${crypto.randomUUID().slice(0, 8)}`;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'sticker')`;
    await ensureObservationPartitions(sql, new Date());
    const run = async (slot: number, price: string, sourceTime: string) => {
      const runId = (await claimIngestRun(sql, source, slot, new Date()))!;
      const rows: StagedObservation[] = [{ catalog_id: catalogId, version: 'default', price, median_price: null, quantity: 3, source_time: new Date(sourceTime) }];
      return writeIngestRun(sql, { runId, source, rows, ingestedAt: new Date(), staleAfterSeconds: 90, received: 1, skipped: 0, unknownNames: 0 });
    };
    expect(await claimIngestRun(sql, source, 1, new Date())).not.toBeNull();
    expect(await claimIngestRun(sql, source, 1, new Date())).toBeNull();

    expect(await run(2, '5.00', '2026-03-01T10:01:00Z')).toMatchObject({ written: 1, changed: 1 });
    // The same observation again (same source time) is not a new sample.
    expect(await run(3, '5.00', '2026-03-01T10:01:00Z')).toMatchObject({ written: 0, changed: 0 });
    // A newer observation at the same price is a sample but not a change.
    expect(await run(4, '5.00', '2026-03-01T10:03:00Z')).toMatchObject({ written: 1, changed: 0 });
    expect(await run(5, '7.25', '2026-03-01T10:05:00Z')).toMatchObject({ written: 1, changed: 1 });
    expect(await run(6, '4.10', '2026-03-01T10:12:00Z')).toMatchObject({ written: 1, changed: 1 });

    const events = await sql<{ payload: { price: string; previous_price: string | null } }[]>`
      select payload from event_outbox where payload->>'catalog_id' = ${catalogId} and payload->>'source' = ${source} order by created_at`;
    expect(events.map((event) => [event.payload.previous_price, event.payload.price])).toEqual([
      [null, '5.00'],
      ['5.00', '7.25'],
      ['7.25', '4.10'],
    ]);

    const rollups = await sql<{ granularity: string; bucket_start: Date; open: string; high: string; low: string; close: string; samples: number }[]>`
      select granularity, bucket_start, open::text, high::text, low::text, close::text, samples from price_rollups
      where catalog_id = ${catalogId} and source = ${source} order by granularity, bucket_start`;
    expect(rollups.map((bucket) => [bucket.granularity, bucket.bucket_start.toISOString(), bucket.open, bucket.high, bucket.low, bucket.close, bucket.samples])).toEqual([
      ['10m', '2026-03-01T10:00:00.000Z', '5.00', '7.25', '5.00', '7.25', 3],
      ['10m', '2026-03-01T10:10:00.000Z', '4.10', '4.10', '4.10', '4.10', 1],
      ['daily', '2026-03-01T00:00:00.000Z', '5.00', '7.25', '4.10', '4.10', 4],
      ['hourly', '2026-03-01T10:00:00.000Z', '5.00', '7.25', '4.10', '4.10', 4],
    ]);
    const [health] = await sql<{ last_rows_written: number; consecutive_failures: number }[]>`select last_rows_written, consecutive_failures from price_sources where name = ${source}`;
    expect(health).toEqual({ last_rows_written: 1, consecutive_failures: 0 });

    await sql`delete from price_sources where name = ${source}`;
    await sql`delete from latest_prices where catalog_id = ${catalogId}`;
  });
});
