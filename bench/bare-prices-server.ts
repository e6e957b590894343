// Baseline for bench/prices.ts: a bare Bun.serve in its own process answering every request with the
// newest stored price snapshot's brotli body (read once from price_snapshots at start and compressed
// as the API compresses it), with the
// headers GET /v1/prices sends for it: same content-type, content-encoding, etag, cache-control,
// vary and last-modified. PORT and DATABASE_URL are required.
import { createSql } from '../shared/platform/db.ts';
import { DerivedListPool } from '../shared/prices/derived-list-pool.ts';
import { findNewestPriceSnapshot } from '../shared/prices/repository.ts';
import { LoadedPriceSnapshot } from '../shared/prices/snapshot-cache.ts';

const port = Number(process.env.PORT);
if (!Number.isInteger(port) || port <= 0) throw new Error('bench/bare-prices-server.ts: PORT must be set');
const databaseUrl = process.env.DATABASE_URL;
if (!databaseUrl) throw new Error('bench/bare-prices-server.ts: DATABASE_URL must be set');

const sql = createSql(databaseUrl, { max: 1, application: 'bench-bare-prices' });
const snapshot = await findNewestPriceSnapshot(sql);
await sql.end({ timeout: 5 });
if (!snapshot) throw new Error('bench/bare-prices-server.ts: no price snapshot in the database');

// A Blob made once: Bun sends it without a per-request copy (a Uint8Array given to new Response is
// copied into every response), so this is the cheapest way bare Bun can send these bytes.
// The pool's one thread indexes the snapshot and is closed: no derived list is built here.
const lists = new DerivedListPool();
const body = new Blob([(await (await LoadedPriceSnapshot.load(snapshot, lists)).body).br]);
await lists.close();
const headers = {
  etag: snapshot.etag,
  'cache-control': `public, max-age=${process.env.INGEST_INTERVAL_SECONDS ?? 30}`,
  vary: 'Accept-Encoding',
  'last-modified': snapshot.created_at.toUTCString(),
  'content-type': 'application/json',
  'content-encoding': 'br',
};

const server = Bun.serve({
  port,
  hostname: '127.0.0.1',
  fetch: () => new Response(body, { headers }),
});

const stop = () => {
  void server.stop(true);
  process.exit(0);
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
