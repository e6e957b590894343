import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Sql } from './db.ts';

export type Migration = { version: number; name: string; file: string };

const fileNamePattern = /^(\d{4})_([a-z0-9_]+)\.sql$/;
// One arbitrary, fixed advisory-lock key for the migrator across every process.
const MIGRATION_LOCK_KEY = 727_001;

export class MigrationError extends Error {}

/** The numbered files of `dir`, in order; a gap or a duplicate number is an error. */
export async function listMigrations(dir: string): Promise<Migration[]> {
  const migrations: Migration[] = [];
  for (const file of (await readdir(dir)).sort()) {
    const match = fileNamePattern.exec(file);
    if (!match) {
      if (file.endsWith('.sql')) throw new MigrationError(`migration file ${file} is not named NNNN_name.sql`);
      continue;
    }
    migrations.push({ version: Number(match[1]), name: match[2]!, file: join(dir, file) });
  }
  migrations.forEach((migration, index) => {
    if (migration.version !== index + 1) {
      throw new MigrationError(`migration ${String(index + 1).padStart(4, '0')} is missing (found ${migration.file})`);
    }
  });
  return migrations;
}

/**
 * Applies pending migrations, each in its own transaction holding a transaction-scoped advisory lock,
 * so two processes starting at once apply each migration exactly once. Returns the versions applied.
 */
export async function migrate(sql: Sql, dir: string, log: (message: string) => void = () => undefined): Promise<number[]> {
  const migrations = await listMigrations(dir);
  const applied: number[] = [];
  for (;;) {
    const next = await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(${MIGRATION_LOCK_KEY})`;
      await tx`create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        applied_at timestamptz not null default now()
      )`;
      const rows = await tx<{ version: number; name: string }[]>`select version, name from schema_migrations order by version`;
      rows.forEach((row, index) => {
        const known = migrations[index];
        if (row.version !== index + 1) throw new MigrationError(`schema_migrations has a gap before version ${row.version}`);
        if (!known) throw new MigrationError(`database has migration ${row.version} (${row.name}) that this code does not know`);
        if (known.name !== row.name) throw new MigrationError(`migration ${row.version} is ${row.name} in the database but ${known.name} on disk`);
      });
      const pending = migrations[rows.length];
      if (!pending) return null;
      await tx.unsafe(await readFile(pending.file, 'utf8'));
      await tx`insert into schema_migrations (version, name) values (${pending.version}, ${pending.name})`;
      return pending;
    });
    if (!next) return applied;
    log(`applied migration ${String(next.version).padStart(4, '0')}_${next.name}`);
    applied.push(next.version);
  }
}
