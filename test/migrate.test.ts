import { afterAll, describe, expect, test } from 'bun:test';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { createSql, type Sql } from '../shared/db.ts';
import { listMigrations, migrate, MigrationError } from '../shared/migrate.ts';

const SQL_DIR = join(import.meta.dir, '..', 'sql');
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
