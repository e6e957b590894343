import { afterAll, expect, test } from 'bun:test';
import { catalogIdFor } from '../shared/catalog/identity.ts';
import { PRICE_SNAPSHOT_CHANNEL } from '../shared/prices/snapshot.ts';
import { createTestApp, eventually, workspaceWithKey } from './helpers.ts';

// The per-process item price cache: reused within its TTL, dropped when a snapshot is announced.
const t = createTestApp({ config: { PRICE_CACHE_MS: '60000' } });
afterAll(() => t.close());

test('cached item prices are dropped as soon as a new snapshot is announced', async () => {
  const name = `Cache Test Item ${crypto.randomUUID()}`;
  const catalogId = catalogIdFor(name);
  const sql = t.deps.sql;
  await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${name}, 'sticker')`;
  const insertPrice = (source: string, price: string) => sql`
    insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
    values (${catalogId}, ${source}, 'default', ${price}::numeric, now(), now(), ${crypto.randomUUID()})`;
  await insertPrice('skinport', '1.10');
  const ws = await workspaceWithKey(t, { scopes: ['prices:read'] });
  const sources = async () => {
    const response = await t.request(`/v2/prices/${catalogId}`, { headers: ws.keyHeaders });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { versions: { sources: { source: string; price: string }[] }[] };
    return body.versions[0]!.sources.map((source) => `${source.source}:${source.price}`);
  };
  expect(await sources()).toEqual(['skinport:1.10']);
  await insertPrice('steam', '1.20');
  // Within the TTL the process reuses what it read…
  expect(await sources()).toEqual(['skinport:1.10']);
  // …until an ingest run's snapshot announcement reaches it.
  await t.deps.redis.publish(PRICE_SNAPSHOT_CHANNEL, '0');
  await eventually(async () => ((await sources()).length === 2 ? true : undefined), 5_000);
  expect(await sources()).toEqual(['skinport:1.10', 'steam:1.20']);
  await sql`delete from latest_prices where catalog_id = ${catalogId}`;
  await sql`delete from catalog_items where catalog_id = ${catalogId}`;
});
