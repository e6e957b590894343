import { afterAll, beforeAll, expect, test } from 'bun:test';
import { copyRows } from '../../shared/platform/db.ts';
import { createTestApp } from '../helpers.ts';

/**
 * shared/platform/db.ts copyRows against real Postgres. postgres.js never settles a COPY that Postgres
 * refused; copyRows must still reject, so the transaction rolls back and frees its locks (an ingest
 * run holds its source's advisory lock around the COPY).
 */
const t = createTestApp();
const table = `copy_probe_${process.pid}`;

beforeAll(async () => {
  await t.deps.sql.unsafe(`create table ${table} (n numeric not null)`);
});

afterAll(async () => {
  await t.deps.sql.unsafe(`drop table if exists ${table}`);
  await t.close();
});

test('rows arrive as sent, in chunks, with the text format escaped', async () => {
  const rows = Array.from({ length: 4_500 }, (_, index) => [`${index}.25`] as const);
  await t.deps.sql.begin((tx) => copyRows(tx, `${table} (n)`, rows));
  const [row] = (await t.deps.sql.unsafe(`select count(*)::int as count, sum(n)::text as sum from ${table}`)) as { count: number; sum: string }[];
  // 0 + 1 + … + 4 499, plus 4 500 quarters.
  expect(row).toEqual({ count: 4_500, sum: '10123875.00' });
});

test('a refused row rejects the COPY, the transaction rolls back, and its advisory lock is free again', async () => {
  for (const count of [3, 4_500]) {
    const rows = Array.from({ length: count }, (_, index) => [index === count - 1 ? 'not a number' : '1'] as const);
    const started = performance.now();
    const outcome = await t.deps.sql
      .begin(async (tx) => {
        await tx`select pg_advisory_xact_lock(${424_242})`;
        await copyRows(tx, `${table} (n)`, rows, { endTimeoutMs: 1_000 });
      })
      .then(
        () => 'committed',
        (error: Error) => error.message,
      );
    expect(outcome).toContain('did not finish');
    expect(performance.now() - started).toBeLessThan(10_000);
    const [lock] = await t.deps.sql.begin((tx) => tx`select pg_try_advisory_xact_lock(${424_242}) as taken`);
    expect(lock!.taken).toBe(true);
  }
  // Nothing of the refused COPYs was kept, and the pool still answers.
  const [row] = (await t.deps.sql.unsafe(`select count(*)::int as count from ${table}`)) as { count: number }[];
  expect(row!.count).toBe(4_500);
});
