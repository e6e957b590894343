import { afterAll, describe, expect, test } from 'bun:test';
import { copyFile, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createSql, type Sql } from '../../shared/platform/db.ts';
import { createLogger } from '../../shared/platform/logger.ts';
import { listMigrations, MigrationError, migrate } from '../../shared/platform/migrate.ts';
import { claimIngestRun } from '../../shared/prices/ingest.ts';
import { applyRetention } from '../../shared/retention/partitions.ts';
import { retentionPolicy } from '../../shared/retention/policy.ts';
import { EVENT_EXPIRED } from '../../shared/webhooks/deliveries.ts';
import { testConfig } from '../helpers.ts';

const SQL_DIR = join(import.meta.dir, '..', '..', 'sql');
const serverUrl = (database: string) => {
  const url = new URL(process.env.DATABASE_URL!);
  url.pathname = `/${database}`;
  return url.toString();
};

// Scratch databases on the test server, one per test, dropped at the end.
const admin = postgres(serverUrl('postgres'), { max: 1, onnotice: () => undefined });
const created: string[] = [];
const clients: Sql[] = [];

async function scratchDatabase(): Promise<string> {
  const name = `migrate_${process.pid}_${Date.now().toString(36)}_${Math.random().toString(36).slice(2, 8)}`;
  await admin.unsafe(`create database "${name}"`);
  created.push(name);
  return name;
}

function client(database: string): Sql {
  const sql = createSql(serverUrl(database), { max: 2, application: 'migrate-test' });
  clients.push(sql);
  return sql;
}

async function migrationDir(files: Record<string, string>): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'migrations-'));
  for (const [name, text] of Object.entries(files)) await writeFile(join(dir, name), text);
  return dir;
}

const tempDirs: string[] = [];
async function tempMigrations(files: Record<string, string>): Promise<string> {
  const dir = await migrationDir(files);
  tempDirs.push(dir);
  return dir;
}

afterAll(async () => {
  await Promise.allSettled(clients.map((sql) => sql.end({ timeout: 5 })));
  for (const name of created) await admin.unsafe(`drop database if exists "${name}" with (force)`);
  await admin.end({ timeout: 5 });
  for (const dir of tempDirs) await rm(dir, { recursive: true, force: true });
});

async function appliedVersions(sql: Sql): Promise<{ version: number; name: string }[]> {
  return sql<{ version: number; name: string }[]>`select version, name from schema_migrations order by version`;
}

async function tableExists(sql: Sql, table: string): Promise<boolean> {
  const [row] = await sql<{ exists: boolean }[]>`select to_regclass(${table}) is not null as exists`;
  return row!.exists;
}

describe('migrate() on the real sql/ directory', () => {
  test('two migrators racing on a fresh database apply each migration exactly once', async () => {
    const database = await scratchDatabase();
    const migrations = await listMigrations(SQL_DIR);
    expect(migrations.length).toBeGreaterThan(0);
    const [first, second] = await Promise.all([migrate(client(database), SQL_DIR), migrate(client(database), SQL_DIR)]);

    // Between them every version was applied once; neither applied one twice.
    const versions = migrations.map((m) => m.version);
    expect([...first!, ...second!].sort((a, b) => a - b)).toEqual(versions);
    const check = client(database);
    expect(await appliedVersions(check)).toEqual(migrations.map((m) => ({ version: m.version, name: m.name })));
    expect(await tableExists(check, 'audit_events')).toBe(true);

    // A later run finds nothing to do.
    expect(await migrate(check, SQL_DIR)).toEqual([]);
    expect(await appliedVersions(check)).toHaveLength(migrations.length);
  });
});

describe('migration files', () => {
  test('a gap in the numbering is a MigrationError naming the missing number', async () => {
    const dir = await tempMigrations({ '0001_a.sql': 'create table a (id int);', '0003_c.sql': 'create table c (id int);' });
    const error = await listMigrations(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MigrationError);
    expect((error as Error).message).toContain('0002');
    // migrate() refuses before touching the database.
    const database = await scratchDatabase();
    const sql = client(database);
    await expect(migrate(sql, dir)).rejects.toBeInstanceOf(MigrationError);
    expect(await tableExists(sql, 'a')).toBe(false);
  });

  test.each([
    ['a name without a number', { '0001_a.sql': 'select 1;', 'init.sql': 'select 1;' }],
    ['a hyphen instead of an underscore', { '0001-a.sql': 'select 1;' }],
    ['capital letters', { '0001_Init.sql': 'select 1;' }],
    ['a three-digit number', { '001_a.sql': 'select 1;' }],
  ])('a .sql file with %s is an error', async (_name, files) => {
    const dir = await tempMigrations(files);
    await expect(listMigrations(dir)).rejects.toBeInstanceOf(MigrationError);
  });

  test('a duplicate number is an error', async () => {
    const dir = await tempMigrations({ '0001_a.sql': 'select 1;', '0001_b.sql': 'select 1;' });
    await expect(listMigrations(dir)).rejects.toBeInstanceOf(MigrationError);
  });

  test('files that are not .sql are ignored', async () => {
    const dir = await tempMigrations({ '0001_a.sql': 'select 1;', 'README.md': '# notes', '0002_b.sql.orig': 'junk' });
    expect((await listMigrations(dir)).map((m) => m.name)).toEqual(['a']);
  });
});

describe('applying migrations', () => {
  test('a failing migration rolls back entirely and is not recorded', async () => {
    const database = await scratchDatabase();
    const sql = client(database);
    const dir = await tempMigrations({
      '0001_first.sql': 'create table first_table (id int);',
      '0002_broken.sql': 'create table broken_table (id int);\ninsert into broken_table values (1);\nselect 1 / 0;',
      '0003_never.sql': 'create table never_table (id int);',
    });

    const error = await migrate(sql, dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(await appliedVersions(sql)).toEqual([{ version: 1, name: 'first' }]);
    expect(await tableExists(sql, 'first_table')).toBe(true);
    expect(await tableExists(sql, 'broken_table')).toBe(false);
    expect(await tableExists(sql, 'never_table')).toBe(false);
  });

  test('migrations apply in order and a fixed file then applies the rest', async () => {
    const database = await scratchDatabase();
    const sql = client(database);
    const dir = await tempMigrations({
      '0001_first.sql': 'create table first_table (id int);',
      '0002_broken.sql': 'select 1 / 0;',
    });
    await expect(migrate(sql, dir)).rejects.toThrow();
    await writeFile(join(dir, '0002_broken.sql'), 'alter table first_table add column name text;');
    await writeFile(join(dir, '0003_more.sql'), 'insert into first_table (id, name) values (1, $$one$$);');
    expect(await migrate(sql, dir)).toEqual([2, 3]);
    expect([...(await sql<{ id: number; name: string }[]>`select id, name from first_table`)]).toEqual([{ id: 1, name: 'one' }]);
  });

  test('a database that knows a migration the code does not is refused', async () => {
    const database = await scratchDatabase();
    const sql = client(database);
    const full = await tempMigrations({ '0001_a.sql': 'select 1;', '0002_b.sql': 'select 1;' });
    const older = await tempMigrations({ '0001_a.sql': 'select 1;' });
    const renamed = await tempMigrations({ '0001_x.sql': 'select 1;', '0002_b.sql': 'select 1;' });
    expect(await migrate(sql, full)).toEqual([1, 2]);
    await expect(migrate(sql, older)).rejects.toBeInstanceOf(MigrationError);
    await expect(migrate(sql, renamed)).rejects.toBeInstanceOf(MigrationError);
  });
});

describe('0011: time partitions over a database that already holds data', () => {
  test('old rows stay readable in one partition per table, new rows go to day partitions, and retention drops the old table whole', async () => {
    const database = await scratchDatabase();
    const sql = client(database);
    const dir = await tempMigrations({});
    const files = (await readdir(SQL_DIR)).filter((file) => file.endsWith('.sql')).sort();
    for (const file of files.filter((name) => name < '0011')) await copyFile(join(SQL_DIR, file), join(dir, file));
    expect(await migrate(sql, dir)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);

    // Data as the earlier schema held it: two days old.
    const old = new Date(Date.now() - 2 * 86_400_000);
    const [workspace] = await sql<{ id: string }[]>`insert into workspaces (id, name) values (gen_random_uuid(), 'migrated') returning id`;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values ('itm_migrated', 'Migrated', 'sticker')`;
    const [run] = await sql<{ id: string }[]>`
      insert into ingest_runs (id, source, slot, started_at, finished_at, status) values (gen_random_uuid(), 'skinport', 7, ${old}, ${old}, 'succeeded') returning id`;
    await sql`insert into price_observations (catalog_id, source, version, price, source_time, ingested_at, run_id) values ('itm_migrated', 'skinport', 'default', 1.50, ${old}, ${old}, ${run!.id})`;
    const [event] = await sql<{ id: string }[]>`
      insert into event_outbox (id, event_type, payload, created_at, published_at) values (gen_random_uuid(), 'prices.updated', '{}', ${old}, ${old}) returning id`;
    await sql`insert into price_event_pages (event_id, page, items, created_at) values (${event!.id}, 2, '[]', ${old})`;
    const [endpoint] = await sql<{ id: string }[]>`
      insert into webhook_endpoints (id, workspace_id, url, event_types, secret_ciphertext, secret_key_id, created_at)
      values (gen_random_uuid(), ${workspace!.id}, 'https://hook.test/', '{prices.updated}', '\\x00', 'k', ${old}) returning id`;
    await sql`
      insert into webhook_deliveries (id, endpoint_id, event_id, state, next_attempt_at, created_at)
      values (gen_random_uuid(), ${endpoint!.id}, ${event!.id}, 'pending', ${old}, ${old})`;
    for (const granularity of ['10m', 'hourly', 'daily']) {
      await sql`insert into price_rollups values ('itm_migrated', 'skinport', 'default', ${granularity}, ${old}, 1, 1, 1, 1, 1, ${old}, ${old})`;
    }
    const indexRunId = Bun.randomUUIDv7('hex', old);
    await sql`
      insert into market_index_runs (id, marketplace, methodology, ingest_run_id, as_of, calculated_at, priced_count, duration_ms)
      values (${indexRunId}, 'skinport', 'cs2.chain-equal-weight.v1', ${run!.id}, ${old}, ${old}, 1, 1)`;
    await sql`insert into market_index_prices (index_run_id, catalog_id, version, type, current_price) values (${indexRunId}, 'itm_migrated', 'default', 'sticker', 1.50)`;

    await copyFile(join(SQL_DIR, files.find((name) => name.startsWith('0011'))!), join(dir, files.find((name) => name.startsWith('0011'))!));
    expect(await migrate(sql, dir)).toEqual([11]);

    // Every old row is still there, in the old table now attached as a partition (rollups: copied).
    const where = async (table: string) =>
      (await sql.unsafe<{ partition: string }[]>(`select tableoid::regclass::text as partition from ${table}`)).map((row) => row.partition);
    // (The old observations table was partitioned itself: its rows sit in its own default partition.)
    expect(await where('price_observations')).toEqual(['price_observations_legacy_default']);
    expect(await where('event_outbox')).toEqual(['event_outbox_legacy']);
    expect(await where('price_event_pages')).toEqual(['price_event_pages_legacy']);
    expect(await where('ingest_runs')).toEqual(['ingest_runs_legacy']);
    expect(await where('market_index_prices')).toEqual(['market_index_prices_legacy']);
    expect((await where('price_rollups')).sort()).toEqual(['price_rollups_10m_legacy', 'price_rollups_daily_legacy', 'price_rollups_hourly_legacy']);
    const [delivery] = await sql<{ event_type: string }[]>`select event_type from webhook_deliveries where endpoint_id = ${endpoint!.id}`;
    expect(delivery!.event_type).toBe('prices.updated');
    // A claimed slot is still claimed once; new rows land in the day partitions made ahead.
    const later = new Date(Date.now() + 2 * 86_400_000);
    expect(await claimIngestRun(sql, 'skinport', 8, later)).not.toBeNull();
    expect(await claimIngestRun(sql, 'skinport', 8, later)).toBeNull();
    await sql`insert into price_observations (catalog_id, source, version, price, source_time, ingested_at, run_id) values ('itm_migrated', 'skinport', 'default', 2, ${later}, ${later}, ${run!.id})`;
    expect((await where('price_observations')).sort()).toEqual([
      'price_observations_legacy_default',
      `price_observations_p${later.toISOString().slice(0, 10).replaceAll('-', '')}`,
    ]);

    // Retention drops the old tables whole once their cutover (tomorrow) is past their retention;
    // the pending delivery of an old event fails first rather than waiting for ever.
    const policy = retentionPolicy(testConfig());
    const report = await applyRetention(sql, policy, new Date(Date.now() + 40 * 86_400_000), createLogger({ level: 'silent', name: 'migrate-test' }));
    for (const table of ['price_observations', 'event_outbox', 'price_event_pages', 'ingest_runs', 'market_index_prices', 'price_rollups_10m']) {
      expect(report[table]).toMatchObject({ dropped: expect.arrayContaining([`${table}_legacy`]) });
    }
    expect(await where('price_observations')).toEqual([]);
    const [failed] = await sql<{ state: string; last_error: string }[]>`select state, last_error from webhook_deliveries where endpoint_id = ${endpoint!.id}`;
    expect(failed).toEqual({ state: 'failed', last_error: EVENT_EXPIRED });
  }, 60_000);
});
