/**
 * Trade-intent benchmark, part 3 of `npm run bench:gameplatform` (issue 11), and alone as
 * `npm run bench:gameplatform-trade`.
 *
 * 100 concurrent POST /v2/trade-intents through the API process (real HTTP), over overlapping
 * assets: one Steam account connected in two workspaces, 40 assets, each request giving 3 of them
 * (picked with a fixed seed) and receiving 1 of the partner's. Owners' snapshots are fresh rows, so
 * no request calls Steam. Afterwards Postgres is asked whether any asset is held by two active
 * reservations (the unique partial index says it cannot be), whether every 201 holds exactly its
 * assets and whether a refused request left anything behind. Latency is per request, client side.
 *
 * `benchTradeIntents(sql, apiBase)` is what bench/gameplatform.ts calls with its own database and API.
 */
import { join } from 'node:path';
import { SCOPES } from '../shared/http/scopes.ts';
import { adminCreateKey, adminCreateWorkspace, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { mulberry32 as seeded } from '../shared/util/random.ts';
import { freePort, onCleanup, printChecks, removeQueueKeysAtCleanup, repoRoot, runBench, say, scratchDatabase, spawnApi, table, waitReady } from './lib.ts';

const REQUESTS = 100;
const ROUNDS = 3;
const ASSETS = 40;
const GIVE_PER_REQUEST = 3;

type Check = [string, boolean, string];
export type TradeBenchRound = { statuses: Record<string, number>; latenciesMs: number[]; createdLatenciesMs: number[]; wallMs: number };

const percentile = (values: number[], p: number) => {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
};

async function insertSnapshot(sql: Sql, steamId: string, assetIds: string[], catalogIds: (string | null)[]): Promise<void> {
  const id = crypto.randomUUID();
  await sql.begin(async (tx) => {
    await tx`insert into inventory_snapshots (id, steam_id, fetched_at, total_assets) values (${id}, ${steamId}, now(), ${assetIds.length})`;
    await tx`
      insert into inventory_assets (snapshot_id, position, asset_id, tradable, catalog_id, record)
      select ${id}, position - 1, asset_id, true, catalog_id,
             jsonb_build_object('asset_id', asset_id, 'trade_hold_until', null, 'market_hash_name', null, 'state', '{}'::jsonb)
      from unnest(${assetIds}::text[], ${catalogIds}::text[]) with ordinality as t(asset_id, catalog_id, position)`;
  });
}

/** Runs the rounds against `apiBase` (an API over `sql`'s database) and returns its report lines and checks. */
export async function benchTradeIntents(sql: Sql, apiBase: string): Promise<{ report: string; checks: Check[] }> {
  const steamId = '76561198111111111';
  const partner = '76561198111111112';
  const keys: string[] = [];
  const accounts: number[] = [];
  for (const name of ['a', 'b']) {
    const workspace = await adminCreateWorkspace(sql, { name: `bench-trade-${name}-${Date.now()}`, tier: 'enterprise' });
    await adminUpdateWorkspace(sql, workspace.id, { budgets: { minute: 1e9, day: 1e9 } });
    keys.push((await adminCreateKey(sql, { workspaceId: workspace.id, label: 'bench-trade', scopes: [...SCOPES] })).key);
    const [row] = await sql<{ account_id: string }[]>`
      insert into gameplatform_accounts (workspace_id, steam_id, persona_name, connected_at) values (${workspace.id}, ${steamId}, 'bench', now()) returning account_id`;
    accounts.push(Number(row!.account_id));
  }
  // Priced items so every creation runs the valuation query over real prices.
  const catalogIds: string[] = [];
  for (let i = 0; i < 4; i += 1) {
    const catalogId = `itm_bench_trade_${process.pid}_${i}`;
    await sql`insert into catalog_items (catalog_id, market_hash_name, type) values (${catalogId}, ${`Bench Trade | ${process.pid} ${i}`}, 'weapon') on conflict do nothing`;
    await sql`
      insert into latest_prices (catalog_id, source, version, price, source_time, ingested_at, run_id)
      values (${catalogId}, 'skinport', 'default', ${`${i + 1}.25`}::numeric, now(), now(), ${crypto.randomUUID()}) on conflict do nothing`;
    catalogIds.push(catalogId);
  }
  const random = seeded(20261123);
  const rounds: TradeBenchRound[] = [];
  const doubleBooked: number[] = [];
  const mismatched: number[] = [];
  for (let round = 0; round < ROUNDS; round += 1) {
    const base = 90_000_000_000 + round * 1_000;
    const assetIds = Array.from({ length: ASSETS }, (_, i) => String(base + i));
    const partnerAssets = Array.from({ length: 10 }, (_, i) => String(base + 500 + i));
    await insertSnapshot(
      sql,
      steamId,
      assetIds,
      assetIds.map((_, i) => catalogIds[i % catalogIds.length]!),
    );
    await insertSnapshot(
      sql,
      partner,
      partnerAssets,
      partnerAssets.map(() => null),
    );
    const bodies = Array.from({ length: REQUESTS }, (_, i) => {
      const give = new Set<string>();
      while (give.size < GIVE_PER_REQUEST) give.add(assetIds[Math.floor(random() * ASSETS)]!);
      return {
        key: keys[i % 2]!,
        body: {
          kind: 'create_offer',
          account_id: accounts[i % 2]!,
          external_reference: `bench-${round}-${i}`,
          expires_at: new Date(Date.now() + 3_600_000).toISOString(),
          partner_steam_id: partner,
          give: [...give],
          receive: [partnerAssets[i % partnerAssets.length]!],
        },
      };
    });
    const started = performance.now();
    const results = await Promise.all(
      bodies.map(async ({ key, body }) => {
        const sent = performance.now();
        const response = await fetch(`${apiBase}/v2/trade-intents`, {
          method: 'POST',
          headers: { 'x-api-key': key, 'idempotency-key': crypto.randomUUID(), 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        const answer = (await response.json()) as { trade_intent_id?: string; error?: { code: string } };
        return { status: response.status, code: answer.error?.code ?? null, ms: performance.now() - sent, id: answer.trade_intent_id ?? null, give: body.give };
      }),
    );
    const wallMs = performance.now() - started;
    const statuses: Record<string, number> = {};
    for (const result of results) {
      const label = result.code ? `${result.status} ${result.code}` : String(result.status);
      statuses[label] = (statuses[label] ?? 0) + 1;
    }
    rounds.push({ statuses, wallMs, latenciesMs: results.map((r) => r.ms), createdLatenciesMs: results.filter((r) => r.status === 201).map((r) => r.ms) });

    // Postgres is the judge: no asset with two active reservations, each 201 holding exactly its
    // give, and nothing left by a refused request.
    const [doubles] = await sql<{ count: number }[]>`
      select count(*)::int as count from (
        select 1 from trade_reservations where steam_id = ${steamId} and released_at is null group by asset_id having count(*) > 1) d`;
    doubleBooked.push(doubles!.count);
    const createdIds = results.filter((r) => r.id).map((r) => r.id!);
    const expected = results.filter((r) => r.id).reduce((sum, r) => sum + r.give.length, 0);
    const [held] = await sql<{ reservations: number; intents: number }[]>`
      select (select count(*)::int from trade_reservations where released_at is null and intent_id = any(${createdIds}::uuid[])) as reservations,
             (select count(*)::int from trade_intents where external_reference like ${`bench-${round}-%`}) as intents`;
    mismatched.push(Math.abs(held!.reservations - expected) + Math.abs(held!.intents - createdIds.length));
    // Free the assets for the next round the way a client would not bother to: release them all.
    await sql`update trade_intents set state = 'cancelled', updated_at = now() where id = any(${createdIds}::uuid[])`;
    await sql`update trade_reservations set released_at = now() where intent_id = any(${createdIds}::uuid[]) and released_at is null`;
  }

  const all = rounds.flatMap((round) => round.latenciesMs);
  const createdAll = rounds.flatMap((round) => round.createdLatenciesMs);
  const fmt = (ms: number) => (Number.isNaN(ms) ? '-' : ms.toFixed(1));
  const report =
    `\n3. trade intents: ${REQUESTS} concurrent POST /v2/trade-intents per round, ${ROUNDS} rounds; ${ASSETS} assets of one Steam account (connected in 2 workspaces), ${GIVE_PER_REQUEST} given per request; loopback, client-side latency\n` +
    `${table([
      ['round', 'statuses', 'wall ms', 'p50 ms', 'p99 ms', 'p50 ms (201)', 'p99 ms (201)', 'double-booked assets'],
      ...rounds.map((round, i) => [
        String(i + 1),
        Object.entries(round.statuses)
          .sort()
          .map(([label, count]) => `${label}: ${count}`)
          .join(', '),
        fmt(round.wallMs),
        fmt(percentile(round.latenciesMs, 50)),
        fmt(percentile(round.latenciesMs, 99)),
        fmt(percentile(round.createdLatenciesMs, 50)),
        fmt(percentile(round.createdLatenciesMs, 99)),
        String(doubleBooked[i]),
      ]),
      [
        'all',
        `${all.length} requests`,
        '',
        fmt(percentile(all, 50)),
        fmt(percentile(all, 99)),
        fmt(percentile(createdAll, 50)),
        fmt(percentile(createdAll, 99)),
        String(doubleBooked.reduce((a, b) => a + b, 0)),
      ],
    ])}\n\n`;
  const unexpected = rounds.flatMap((round) => Object.keys(round.statuses)).filter((label) => label !== '201' && label !== '409 asset_reserved');
  const checks: Check[] = [
    ['no asset held by two active reservations (SQL)', doubleBooked.every((count) => count === 0), `${doubleBooked.reduce((a, b) => a + b, 0)} double-booked`],
    [
      'each 201 holds exactly its assets; refused requests left nothing',
      mismatched.every((count) => count === 0),
      `${mismatched.reduce((a, b) => a + b, 0)} mismatches`,
    ],
    ['only 201 and 409 asset_reserved answers', unexpected.length === 0, unexpected.length === 0 ? 'none other' : [...new Set(unexpected)].join(', ')],
  ];
  return { report, checks };
}

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('REDIS_URL is not set; run this through `npm run bench:gameplatform-trade`');
  const { url: dbUrl } = await scratchDatabase('trade');
  const sql = createSql(dbUrl, { max: 4, application: 'bench' });
  onCleanup(() => sql.end({ timeout: 5 }).catch(() => undefined));
  await migrate(sql, join(repoRoot, 'sql'));
  const queuePrefix = `bench${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const apiPort = await freePort();
  const api = spawnApi(apiPort, {
    DATABASE_URL: dbUrl,
    REDIS_URL: redisUrl,
    QUEUE_PREFIX: queuePrefix,
    // Never reached (snapshots are fresh rows); set so a mistake shows as a failure, not a call out.
    STEAM_COMMUNITY_URL: 'http://127.0.0.1:9',
  });
  const apiBase = `http://127.0.0.1:${apiPort}`;
  await waitReady('API', api, `${apiBase}/v2/health`);
  say('API ready');
  const { report, checks } = await benchTradeIntents(sql, apiBase);
  process.stdout.write(report);
  printChecks(checks);
}

if (import.meta.main) await runBench(main);
