import type { Sql } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { readCompatDataset } from './dataset.ts';
import { COMPAT_DOCUMENTS, COMPAT_SALES_DOCUMENTS, type CompatBuilder, type CompatDataset, type CompatDocumentName } from './types.ts';

/**
 * The drop-in formats' documents of one snapshot (docs/design.md §20), stored in compat_documents: built once
 * per snapshot from a CompatDataset read as of the snapshot's build time (so every document agrees
 * with the keyless list it goes with), by whichever process asks first (the index pool right after a
 * snapshot, or an API process whose request finds none), under a lock per snapshot: concurrent askers
 * wait for one build. A document built from the sales windows alone (COMPAT_SALES_DOCUMENTS) is
 * copied from a kept snapshot while the windows are unchanged (sql/0030). A builder's `value` that is a string is taken as its JSON text (formats that
 * write exact JSON numbers from decimal text); anything else is JSON.stringify'd.
 */
export type CompatBuilders = Record<CompatDocumentName, CompatBuilder>;

export type StoredCompatDocument = { name: CompatDocumentName; body: Buffer; oldest_source_at: Date | null; built_at: Date };

export type CompatBuildReport = { built: boolean; ms: number; phases_ms: Record<string, number>; bytes: Record<string, number> };

/** Builds and stores the snapshot's documents unless they are stored already. */
export async function ensureCompatDocuments(
  sql: Sql,
  snapshot: { id: number; created_at: Date },
  builders: CompatBuilders,
  log?: Logger,
  /** The snapshot's dataset where its prices were gathered in its build (gatheredCompatDataset); read afresh otherwise. */
  dataset: () => Promise<CompatDataset> = () => readCompatDataset(sql, snapshot.created_at),
): Promise<CompatBuildReport> {
  const started = performance.now();
  const phases: Record<string, number> = {};
  const bytes: Record<string, number> = {};
  const built = await sql.begin(async (tx) => {
    // One build per snapshot: the second asker waits here, then finds the documents stored.
    await tx`select pg_advisory_xact_lock(${0x636f6d70}, ${snapshot.id % 2_147_483_647})`;
    const [stored] = await tx<{ n: number }[]>`select count(*)::int as n from compat_documents where snapshot_id = ${snapshot.id}`;
    if (stored!.n >= COMPAT_DOCUMENTS.length) return false;
    const [exists] = await tx`select 1 from price_snapshots where id = ${snapshot.id}`;
    // A snapshot deleted meanwhile (only the newest few are kept) needs no documents.
    if (!exists) return false;
    let mark = performance.now();
    // Read over the pool, not this transaction's one connection: the three queries run at once (the
    // lock held here still makes this the only build of the snapshot).
    const data = await dataset();
    phases.dataset = Math.round(performance.now() - mark);
    for (const name of COMPAT_DOCUMENTS) {
      mark = performance.now();
      const inputs = COMPAT_SALES_DOCUMENTS.has(name) ? `sales:${data.sales_generation}` : null;
      if (inputs !== null) {
        // The windows have not changed since a kept snapshot's document was built from them: the
        // same bytes, copied inside the database rather than built and sent again (~19 MB at full catalog).
        const [copied] = await tx<{ bytes: number }[]>`
          insert into compat_documents (snapshot_id, name, body, oldest_source_at, built_at, build_ms, inputs)
          select ${snapshot.id}, name, body, oldest_source_at, ${new Date()}, 0, inputs
          from compat_documents where name = ${name} and inputs = ${inputs} and snapshot_id <> ${snapshot.id}
          order by snapshot_id desc limit 1
          on conflict (snapshot_id, name) do nothing
          returning length(body) as bytes`;
        if (copied) {
          phases[`${name} (kept)`] = Math.round(performance.now() - mark);
          bytes[name] = copied.bytes;
          continue;
        }
      }
      const document = builders[name](data);
      const body = Buffer.from(typeof document.value === 'string' ? document.value : JSON.stringify(document.value));
      const ms = Math.round(performance.now() - mark);
      phases[name] = ms;
      bytes[name] = body.length;
      await tx`
        insert into compat_documents (snapshot_id, name, body, oldest_source_at, built_at, build_ms, inputs)
        values (${snapshot.id}, ${name}, ${body}, ${document.oldest_source_ms === null ? null : new Date(document.oldest_source_ms)}, ${new Date()}, ${ms}, ${inputs})
        on conflict (snapshot_id, name) do nothing`;
    }
    return true;
  });
  const report = { built, ms: Math.round(performance.now() - started), phases_ms: phases, bytes };
  if (built) log?.info({ snapshot_id: snapshot.id, ...report }, 'compat documents built');
  return report;
}

/** One stored document of a snapshot, or null when it has not been built. */
export async function findCompatDocument(sql: Sql, snapshotId: number, name: CompatDocumentName): Promise<StoredCompatDocument | null> {
  const [row] = await sql<{ body: Buffer; oldest_source_at: Date | null; built_at: Date }[]>`
    select body, oldest_source_at, built_at from compat_documents where snapshot_id = ${snapshotId} and name = ${name}`;
  return row ? { name, body: row.body, oldest_source_at: row.oldest_source_at, built_at: row.built_at } : null;
}
