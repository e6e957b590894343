/**
 * Webhook fan-out per ingest run: `bun scripts/dev.ts exec bun bench/delivery-fanout.ts` (also part of
 * `npm run bench:delivery`).
 *
 * In a scratch database (`<dev db>_bench_<pid>`, dropped afterwards) with BENCH_FANOUT_ITEMS catalog
 * items (default 30 000), for 20 endpoints (the per-workspace cap) subscribed to `price.updated`,
 * then 20 others subscribed to `prices.updated` instead, two ingest runs each through
 * shared/prices/ingest.ts `writeIngestRun`:
 *  - a full first snapshot (every item is new to the source, so every item changes);
 *  - a steady run (a tenth of the items move).
 * After each run the outbox is dispatched to deliveries as the webhooks pool does
 * (shared/webhooks/dispatch.ts `dispatchOutbox`; the BullMQ jobs it would add are counted, not
 * added). Measured per run: deliveries, rows written by webhook emission and fan-out (event_outbox,
 * price_event_pages, webhook_deliveries; a successful first attempt adds one webhook_delivery_attempts
 * row per delivery, counted as such), bytes of event data to send, and the time of the ingest write
 * and of the dispatch. The ingest's own rows (observations, latest prices, three rollups) are the
 * same in both modes and shown once.
 *
 * Environment: DATABASE_URL (scripts/dev.ts), BENCH_FANOUT_ITEMS.
 */
import { join } from 'node:path';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { claimIngestRun, type StagedObservation, writeIngestRun } from '../shared/prices/ingest.ts';
import { newId } from '../shared/util/ids.ts';
import { dispatchOutbox } from '../shared/webhooks/dispatch.ts';
import { MAX_ENDPOINTS_PER_WORKSPACE } from '../shared/webhooks/endpoints.ts';
import { SecretKeyring } from '../shared/webhooks/secrets.ts';
import { createWebhookEndpoint, removeWebhookEndpoint } from '../shared/webhooks/service.ts';
import { onCleanup, positiveInt, printChecks, repoRoot, runBench, say, scratchDatabase, table } from './lib.ts';

const ITEMS = positiveInt('BENCH_FANOUT_ITEMS', 30_000);
const STEADY_SHARE = 0.1;
const ENDPOINTS = MAX_ENDPOINTS_PER_WORKSPACE;
const MODES = ['price.updated', 'prices.updated'] as const;
type Mode = (typeof MODES)[number];

type Counts = { outboxSingle: number; outboxBatch: number; pages: number; deliveries: number; ingestRows: number };

async function counts(sql: Sql): Promise<Counts> {
  const [row] = await sql<Counts[]>`
    select (select count(*)::int from event_outbox where event_type = 'price.updated') as "outboxSingle",
           (select count(*)::int from event_outbox where event_type = 'prices.updated') as "outboxBatch",
           (select count(*)::int from price_event_pages) as pages,
           (select count(*)::int from webhook_deliveries) as deliveries,
           (select count(*)::int from price_observations) + (select count(*)::int from latest_prices) + (select count(*)::int from price_rollups) as "ingestRows"`;
  return row!;
}

/** Bytes of event data the run's deliveries carry (the `data` of each body, per endpoint). */
async function bytesToSend(sql: Sql, since: Date): Promise<number> {
  const [row] = await sql<{ bytes: string | null }[]>`
    select sum(octet_length(o.payload::text))::text as bytes
    from webhook_deliveries d join event_outbox o on o.id = d.event_id where d.created_at >= ${since}`;
  return Number(row!.bytes ?? 0);
}

type RunFigures = {
  mode: Mode;
  run: string;
  changed: number;
  deliveries: number;
  jobs: number;
  rows: Counts;
  bytes: number;
  writeMs: number;
  dispatchMs: number;
};

export async function benchFanout(): Promise<[string, boolean, string][]> {
  const db = await scratchDatabase('fanout');
  const sql = createSql(db.url, { max: 4, application: 'bench-fanout' });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const workspaceId = newId();
  await sql`insert into workspaces (id, name, tier) values (${workspaceId}, 'bench fanout', 'enterprise')`;
  const ids = Array.from({ length: ITEMS }, (_, index) => `itm_bench_fanout_${String(index).padStart(6, '0')}`);
  await sql`
    insert into catalog_items (catalog_id, market_hash_name, type)
    select id, 'Bench Fanout ' || id, 'sticker' from unnest(${ids}::text[]) as id`;
  const keyring = SecretKeyring.fromConfig({
    WEBHOOK_SECRET_KEY: Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64'),
    WEBHOOK_SECRET_KEYS_PREVIOUS: [],
  });
  const meta = () => ({ workspaceId, actor: { type: 'admin' as const, id: 'bench' }, requestId: 'bench', now: new Date() });
  say(`${ITEMS} items, ${ENDPOINTS} endpoints per mode`);

  const figures: RunFigures[] = [];
  for (const mode of MODES) {
    // Nothing here dials the endpoints: only the rows delivery would work from are written.
    const endpoints = [];
    for (let index = 0; index < ENDPOINTS; index += 1) {
      endpoints.push(
        await createWebhookEndpoint(sql, keyring, { allowPrivate: true }, { url: `https://127.0.0.1:9/${mode}/${index}`, eventTypes: [mode] }, meta()),
      );
    }
    const source = `fanout_${mode.replace('.', '_')}`;
    const runs: [string, (index: number) => boolean][] = [
      ['full snapshot', () => true],
      [`steady (${STEADY_SHARE * 100} %)`, (index) => index % Math.round(1 / STEADY_SHARE) === 0],
    ];
    for (const [slot, [name, moves]] of runs.entries()) {
      const at = new Date();
      const rows: StagedObservation[] = ids.flatMap((id, index) =>
        moves(index)
          ? [
              {
                catalog_id: id,
                version: 'default',
                price: `${1 + (index % 500)}.${String(slot * 7 + 10).padStart(2, '0')}`,
                median_price: null,
                quantity: 3,
                source_time: at,
              },
            ]
          : [],
      );
      const before = await counts(sql);
      const runId = (await claimIngestRun(sql, source, slot + 1, at))!;
      let started = performance.now();
      const written = await writeIngestRun(sql, {
        runId,
        source,
        rows,
        ingestedAt: at,
        staleAfterSeconds: 600,
        received: rows.length,
        skipped: 0,
        unknownNames: 0,
      });
      const writeMs = performance.now() - started;
      let jobs = 0;
      started = performance.now();
      const dispatched = await dispatchOutbox(
        sql,
        () => new Date(),
        async (batch) => {
          jobs += batch.length;
        },
      );
      const dispatchMs = performance.now() - started;
      const after = await counts(sql);
      const delta = Object.fromEntries(Object.entries(after).map(([key, value]) => [key, value - before[key as keyof Counts]])) as Counts;
      figures.push({
        mode,
        run: name,
        changed: written.changed,
        deliveries: dispatched.deliveries,
        jobs,
        rows: delta,
        bytes: await bytesToSend(sql, at),
        writeMs,
        dispatchMs,
      });
      say(`${mode}, ${name}: ${written.changed} changed, ${dispatched.deliveries} deliveries`);
    }
    for (const endpoint of endpoints) await removeWebhookEndpoint(sql, endpoint.id, meta());
    // The next mode's dispatch should not wade through this one's deliveries.
    await sql`delete from webhook_deliveries`;
  }

  const mb = (bytes: number) => `${(bytes / 1_048_576).toFixed(1)} MB`;
  const webhookRows = (f: RunFigures) => f.rows.outboxSingle + f.rows.outboxBatch + f.rows.pages + f.rows.deliveries + f.deliveries;
  process.stdout.write('\n');
  process.stdout.write(
    `${table([
      [
        'per ingest run',
        'changed',
        'deliveries (BullMQ jobs, 25 first attempts each)',
        'outbox price.updated / prices.updated',
        'pages',
        'delivery + attempt rows',
        'webhook rows in all',
        'event data to send',
        'ingest write / dispatch',
      ],
      ...figures.map((f) => [
        `${ENDPOINTS} × ${f.mode}, ${f.run}`,
        String(f.changed),
        `${f.deliveries} (${f.jobs})`,
        `${f.rows.outboxSingle} / ${f.rows.outboxBatch}`,
        String(f.rows.pages),
        `${f.rows.deliveries} + ${f.deliveries}`,
        String(webhookRows(f)),
        mb(f.bytes),
        `${(f.writeMs / 1000).toFixed(2)} s / ${(f.dispatchMs / 1000).toFixed(2)} s`,
      ]),
    ])}\n`,
  );
  // Net new rows: a steady run updates latest prices and rollup buckets in place.
  process.stdout.write(
    `ingest's own new rows per run, either mode (observations + latest prices + rollups): ${figures
      .map((f) => `${f.run} ${f.rows.ingestRows}`)
      .slice(0, 2)
      .join(', ')}\n`,
  );
  process.stdout.write('prices.updated event data is the first 1 000 items per endpoint; receivers fetch further pages through next_url\n\n');

  const single = figures.filter((f) => f.mode === 'price.updated');
  const batched = figures.filter((f) => f.mode === 'prices.updated');
  const pagesFor = (changed: number) => Math.max(0, Math.ceil(changed / 1_000) - 1);
  return [
    [
      `prices.updated: one delivery per endpoint per run (${ENDPOINTS})`,
      batched.every((f) => f.deliveries === ENDPOINTS && f.rows.outboxBatch === 1 && f.rows.pages === pagesFor(f.changed)),
      batched.map((f) => `${f.run}: ${f.deliveries} deliveries, ${f.rows.pages} pages`).join('; '),
    ],
    [
      `price.updated: one delivery per changed item per endpoint`,
      single.every((f) => f.deliveries === f.changed * ENDPOINTS),
      single.map((f) => `${f.run}: ${f.deliveries} deliveries`).join('; '),
    ],
  ];
}

if (import.meta.main) await runBench(async () => printChecks(await benchFanout()));
