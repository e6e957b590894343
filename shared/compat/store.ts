import { promisify } from 'node:util';
import { constants as zlibConstants, zstdCompressSync, zstdDecompress } from 'node:zlib';
import type { Sql } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import type { Redis } from '../platform/redis.ts';
import { readCompatDataset } from './dataset.ts';
import {
  type BuiltCompatDocument,
  COMPAT_DOCUMENTS,
  COMPAT_SALES_DOCUMENTS,
  type CompatBuilder,
  type CompatDataset,
  type CompatDocumentName,
  documentBytes,
} from './types.ts';

/**
 * The drop-in formats' documents of one snapshot (docs/design.md §20): built once per snapshot from a
 * CompatDataset as of the snapshot's build time (so every document agrees with the keyless list it
 * goes with), by whichever process asks first (the index pool right after a snapshot, or an API
 * process whose request finds none), under a Postgres lock per snapshot: concurrent askers wait for
 * one build. A builder's `value` that is a string is taken as its JSON text (formats that write exact
 * JSON numbers from decimal text); anything else is JSON.stringify'd.
 *
 * Stored in Redis, as a cache (docs/decisions.md "Drop-in formats"), zstd-compressed (below): every
 * document can be built again from Postgres, and Redis took ~5-14 ms/MB of JSON here against ~13-19
 * ms/MB into a Postgres row. A snapshot's index (`…:compat:meta:<snapshot>`, a hash of document name → where its
 * bytes are, its oldest source time) points at the bytes: a price document under the snapshot's id,
 * a document built from the sales windows alone (COMPAT_SALES_DOCUMENTS) under the sales generation
 * (sql/0030), so a snapshot whose windows did not change points at the bytes already there. The
 * documents of the COMPAT_SNAPSHOTS_KEPT snapshots built last are kept; every key also expires
 * after COMPAT_DOCUMENT_TTL_SECONDS, and an API process keeps what it loaded.
 */
export type CompatBuilders = Record<CompatDocumentName, CompatBuilder>;

/** Where the documents live: the database (the lock, the snapshot's existence, the data) and Redis (the bytes). */
export type CompatStore = { sql: Sql; redis: Redis; prefix: string };

export type StoredCompatDocument = { name: CompatDocumentName; body: Buffer; oldest_source_ms: number | null; built_at_ms: number };

/** `bytes`: each document's JSON; `stored`: what was written to Redis for it (compressed; absent where nothing was written). */
export type CompatBuildReport = {
  built: boolean;
  ms: number;
  phases_ms: Record<string, number>;
  bytes: Record<string, number>;
  stored: Record<string, number>;
};

/** Built snapshots whose documents are kept (the API serves the newest; the others cover a process still on an older one). */
export const COMPAT_SNAPSHOTS_KEPT = 3;
/** A backstop: every document key expires after this, whatever the trimming did. */
export const COMPAT_DOCUMENT_TTL_SECONDS = 3_600;

/** Where a document's bytes are; `stored`: they are kept zstd-compressed, this many (absent: kept as they are). */
type DocumentEntry = { key: string; oldest_source_ms: number | null; built_at_ms: number; bytes: number; stored?: number };

/**
 * Documents are kept zstd-compressed (level 1): ~50 MB of JSON a snapshot at full catalog became ~5 MB,
 * and sending them to Redis, not building them, had become most of a build (~5-14 ms/MB here, against
 * ~2 ms/MB to compress); the API processes that load them read as many fewer bytes. Compressed at once,
 * on this thread: Bun's asynchronous zstd did not overlap with the builds here (a 6 MB document took
 * ~22 ms that way, added to the JS work, against ~13 ms synchronously).
 */
const unzstdAsync = promisify(zstdDecompress);
const ZSTD_OPTIONS = { params: { [zlibConstants.ZSTD_c_compressionLevel]: 1 } };

function compressed(body: Buffer): Buffer {
  return zstdCompressSync(body, ZSTD_OPTIONS);
}

/** Where each builder's last document was written, by this process (shared/compat/types.ts BuiltCompatDocument.unchanged). */
const lastWritten = new WeakMap<CompatBuilder, { redis: Redis; prefix: string; key: string; entry: DocumentEntry }>();

const metaKey = (prefix: string, snapshotId: number) => `${prefix}:compat:meta:${snapshotId}`;
const builtKey = (prefix: string) => `${prefix}:compat:built`;
const priceDocumentKey = (prefix: string, snapshotId: number, name: CompatDocumentName) => `${prefix}:compat:doc:${snapshotId}:${name}`;
const salesDocumentKey = (prefix: string, generation: string, name: CompatDocumentName) => `${prefix}:compat:sales:${generation}:${name}`;

async function storedEntries(store: CompatStore, snapshotId: number): Promise<Map<CompatDocumentName, DocumentEntry>> {
  const fields = await store.redis.hgetall(metaKey(store.prefix, snapshotId));
  return new Map(Object.entries(fields).map(([name, value]) => [name as CompatDocumentName, JSON.parse(value) as DocumentEntry]));
}

/** Builds and stores the snapshot's documents unless they are stored already. */
export async function ensureCompatDocuments(
  store: CompatStore,
  snapshot: { id: number; created_at: Date },
  builders: CompatBuilders,
  log?: Logger,
  /** The snapshot's dataset where its prices were gathered in its build (gatheredCompatDataset); read afresh otherwise. */
  dataset: () => Promise<CompatDataset> = () => readCompatDataset(store.sql, snapshot.created_at),
): Promise<CompatBuildReport> {
  const { sql, redis, prefix } = store;
  const started = performance.now();
  const phases: Record<string, number> = {};
  const bytes: Record<string, number> = {};
  const storedBytes: Record<string, number> = {};
  const built = await sql.begin(async (tx) => {
    // One build per snapshot: the second asker waits here, then finds the documents stored.
    await tx`select pg_advisory_xact_lock(${0x636f6d70}, ${snapshot.id % 2_147_483_647})`;
    const stored = await storedEntries(store, snapshot.id);
    if (COMPAT_DOCUMENTS.every((name) => stored.has(name))) {
      // Stored, unless a key expired meanwhile (then this build writes them again).
      const present = await redis.exists(...COMPAT_DOCUMENTS.map((name) => stored.get(name)!.key));
      if (present === COMPAT_DOCUMENTS.length) return false;
    }
    const [exists] = await tx`select 1 from price_snapshots where id = ${snapshot.id}`;
    // A snapshot deleted meanwhile (only the newest few are kept) needs no documents.
    if (!exists) return false;
    let mark = performance.now();
    const data = await dataset();
    phases.dataset = Math.round(performance.now() - mark);
    const entries: Record<string, string> = {};
    // Each document is sent to Redis as soon as it is built and not waited for before the next is
    // built: Redis stores one while this process builds the next (the writes are ~30 MB a snapshot).
    const writes: Promise<unknown>[] = [];
    const made: BuiltCompatDocument[] = [];
    let compressMs = 0;
    const unchanged: { name: CompatDocumentName; renewed: Promise<number>; entry: DocumentEntry; body: Buffer; builder: CompatBuilder; key: string }[] = [];
    const write = (sent: Promise<unknown>) => {
      // Awaited below; should a later builder throw first, its failure is the build's and this one is dropped.
      sent.catch(() => undefined);
      writes.push(sent);
    };
    for (const name of COMPAT_DOCUMENTS) {
      if (!COMPAT_SALES_DOCUMENTS.has(name)) continue;
      // The windows have not changed since a kept snapshot's document was built from them: the same
      // bytes (~19 MB at full catalog), pointed at rather than built and written again. Looked up
      // before any write is queued on the connection, so the lookup waits for none.
      mark = performance.now();
      const key = salesDocumentKey(prefix, data.sales_generation, name);
      const kept = await redis.hget(`${key}:entry`, 'entry');
      if (kept !== null && (await redis.expire(key, COMPAT_DOCUMENT_TTL_SECONDS)) === 1) {
        await redis.expire(`${key}:entry`, COMPAT_DOCUMENT_TTL_SECONDS);
        entries[name] = kept;
        phases[`${name} (kept)`] = Math.round(performance.now() - mark);
        bytes[name] = (JSON.parse(kept) as DocumentEntry).bytes;
      }
    }
    for (const name of COMPAT_DOCUMENTS) {
      if (entries[name] !== undefined) continue;
      mark = performance.now();
      const sales = COMPAT_SALES_DOCUMENTS.has(name);
      const key = sales ? salesDocumentKey(prefix, data.sales_generation, name) : priceDocumentKey(prefix, snapshot.id, name);
      const builder = builders[name];
      const document = builder(data);
      made.push(document);
      const body = documentBytes(document);
      phases[name] = Math.round(performance.now() - mark);
      bytes[name] = body.length;
      // The builder made these bytes last time, and this process wrote them for the snapshot before: that
      // snapshot's key is pointed at (and its expiry renewed) rather than ~10 MB written again. A run of
      // one source leaves the formats that do not read it as they were.
      const written = lastWritten.get(builder);
      if (document.unchanged && written !== undefined && written.redis === redis && written.prefix === prefix && !sales) {
        // Not awaited here (it would wait behind the writes queued before it): checked with them below.
        const renewed = redis.expire(written.key, COMPAT_DOCUMENT_TTL_SECONDS);
        write(renewed);
        // The same bytes may stand on newer observations (a listing observed the same prices again): its oldest is this build's.
        unchanged.push({
          name,
          renewed,
          entry: { ...written.entry, oldest_source_ms: document.oldest_source_ms, built_at_ms: Date.now() },
          body,
          builder,
          key,
        });
        entries[name] = JSON.stringify(unchanged[unchanged.length - 1]!.entry);
        phases[`${name} (unchanged)`] = 0;
        continue;
      }
      mark = performance.now();
      const packed = compressed(body);
      phases[`${name} (compress)`] = Math.round(performance.now() - mark);
      compressMs += performance.now() - mark;
      const entry: DocumentEntry = { key, oldest_source_ms: document.oldest_source_ms, built_at_ms: Date.now(), bytes: body.length, stored: packed.length };
      storedBytes[name] = packed.length;
      entries[name] = JSON.stringify(entry);
      const stored = redis.set(key, packed, 'EX', COMPAT_DOCUMENT_TTL_SECONDS);
      write(stored);
      // The entry is written once the bytes it points at are (and the snapshot's index after all of them).
      if (sales)
        write(stored.then(() => redis.multi().hset(`${key}:entry`, 'entry', JSON.stringify(entry)).expire(`${key}:entry`, COMPAT_DOCUMENT_TTL_SECONDS).exec()));
      lastWritten.set(builder, { redis, prefix, key, entry });
    }
    phases.compress = Math.round(compressMs);
    mark = performance.now();
    await Promise.all(writes);
    for (const document of unchanged) {
      if ((await document.renewed) === 1) continue;
      // The bytes pointed at were gone (expired, or trimmed meanwhile): written again, under this snapshot.
      const packed = compressed(document.body);
      storedBytes[document.name] = packed.length;
      const entry = { ...document.entry, key: document.key, stored: packed.length };
      await redis.set(document.key, packed, 'EX', COMPAT_DOCUMENT_TTL_SECONDS);
      lastWritten.set(document.builder, { redis, prefix, key: document.key, entry });
      entries[document.name] = JSON.stringify(entry);
    }
    // Redis has every document's bytes: their builders may write later documents into the same memory.
    for (const document of made) document.release?.();
    // What the writes still cost once the last document was built (the rest overlapped the builds).
    phases.store = Math.round(performance.now() - mark);
    await redis
      .multi()
      .hset(metaKey(prefix, snapshot.id), entries)
      .expire(metaKey(prefix, snapshot.id), COMPAT_DOCUMENT_TTL_SECONDS)
      // Ordered by when it was built, not by id: a database whose ids started again (restored,
      // recreated) must not have each new build trimmed at once as "older" than the ids still listed.
      .zadd(builtKey(prefix), Date.now(), String(snapshot.id))
      .exec();
    await trimBuiltSnapshots(store);
    return true;
  });
  const report = { built, ms: Math.round(performance.now() - started), phases_ms: phases, bytes, stored: storedBytes };
  if (built) log?.info({ snapshot_id: snapshot.id, ...report }, 'compat documents built');
  return report;
}

/** Deletes the documents of built snapshots beyond the COMPAT_SNAPSHOTS_KEPT built last (a sales document only when no kept snapshot points at it). */
async function trimBuiltSnapshots(store: CompatStore): Promise<void> {
  const { redis, prefix } = store;
  const ids = (await redis.zrange(builtKey(prefix), '0', '-1')).map(Number);
  if (ids.length <= COMPAT_SNAPSHOTS_KEPT) return;
  const dropped = ids.slice(0, ids.length - COMPAT_SNAPSHOTS_KEPT);
  const kept = ids.slice(ids.length - COMPAT_SNAPSHOTS_KEPT);
  const keptKeys = new Set<string>();
  for (const id of kept) for (const entry of (await storedEntries(store, id)).values()) keptKeys.add(entry.key);
  const doomed: string[] = [];
  for (const id of dropped) {
    for (const entry of (await storedEntries(store, id)).values()) {
      if (keptKeys.has(entry.key)) continue;
      doomed.push(entry.key, `${entry.key}:entry`);
    }
    doomed.push(metaKey(prefix, id));
  }
  const write = redis.multi().zrem(builtKey(prefix), ...dropped.map(String));
  if (doomed.length > 0) write.unlink(...doomed);
  await write.exec();
}

/** One stored document of a snapshot, or null when it has not been built (or has expired). */
export async function findCompatDocument(store: CompatStore, snapshotId: number, name: CompatDocumentName): Promise<StoredCompatDocument | null> {
  const value = await store.redis.hget(metaKey(store.prefix, snapshotId), name);
  if (value === null) return null;
  const entry = JSON.parse(value) as DocumentEntry;
  const kept = await store.redis.getBuffer(entry.key);
  if (!kept) return null;
  const body = entry.stored === undefined ? kept : await unzstdAsync(kept);
  return { name, body, oldest_source_ms: entry.oldest_source_ms, built_at_ms: entry.built_at_ms };
}
