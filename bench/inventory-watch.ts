/**
 * Inventory watch benchmark (issue 21, docs/design.md §15): "Steam requests per minute never above the
 * budget with 500 connected accounts". Alone as `npm run bench:inventory-watch`; bench/stream.ts
 * calls `benchInventoryWatch()`.
 *
 * One workspace with a live endpoint subscribed to inventory.changed and 500 connected accounts,
 * seeded straight into a scratch database; the Steam fake (in this process, real HTTP) holds each
 * account's inventory (3 items, one page). Two real maintenance worker processes
 * (`bun workers/main.ts maintenance`) run the watch with a shortened interval, so every account is
 * always due and the watch is limited by the budget alone. Every inventory request is timed where
 * Steam would see it, at the fake, and the most requests in any 60 s sliding window is compared
 * with the budget. Two cases: the default 20 a minute for BENCH_WATCH_DEFAULT_S (150 s), and
 * 600 a minute for BENCH_WATCH_HIGH_S (75 s), where a whole cycle of the 500 fits in the window;
 * while it runs, an inventory changes every 2 s, so reads also store, diff and send.
 *
 * Trade history (docs/design.md §17, issue 30): the same 500 accounts, each with an owner token and a trade
 * with a partner, in a workspace subscribed to trade.reversed, polled by the same two processes
 * (GetTradeHistory, one request per account per read, within the same shared budget). Reversals are
 * planted in the fake after the polls started; each must be sent exactly once, within two intervals
 * of being planted. At the default 20 a minute a cycle of 500 accounts takes 25 minutes whatever
 * the interval (the budget, not TRADE_HISTORY_INTERVAL_SECONDS, sets each account's period), so the
 * default case (BENCH_TRADES_DEFAULT_S, 150 s, interval 60 s) plants its reversals in the 30
 * accounts read first and checks the budget; the second case (1 200 a minute, interval 30 s, so a
 * whole cycle fits an interval; BENCH_TRADES_HIGH_S, 90 s) plants 50 reversals across all accounts
 * after the first cycle. BENCH_WATCH_PARTS=trades runs only these, =watch only the watch's.
 */
import { join } from 'node:path';
import { sealSteamToken } from '../shared/gameplatform/steam-token.ts';
import { upsertSealedToken } from '../shared/gameplatform/steam-token-repository.ts';
import { adminCreateWorkspace } from '../shared/identity/admin.ts';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { SecretKeyring } from '../shared/webhooks/secrets.ts';
import { type ItemSpec, inventoryOf, maxInSlidingWindow, type SteamFake, startSteamFake } from '../test/fakes/steam/server.ts';
import {
  exitedEarly,
  onCleanup,
  positiveInt,
  printChecks,
  removeQueueKeysAtCleanup,
  repoRoot,
  runBench,
  type Spawned,
  say,
  scratchDatabase,
  sleep,
  spawnBun,
  stopChild,
  table,
} from './lib.ts';

const ACCOUNTS = 500;
const WINDOW_MS = 60_000;
const PROCESSES = 2;
const SPECS: ItemSpec[] = [
  { item: 'AK-47 | Redline', wear: 0.2, seed: 1 },
  { item: 'AWP | Asiimov', wear: 0.3, seed: 2 },
  { item: 'Container | Revolution Case' },
];

type Check = [string, boolean, string];
type CaseResult = {
  name: string;
  budget: number;
  seconds: number;
  requests: number;
  maxInWindow: number;
  perMinute: number[];
  accountsRead: number;
  /** Distinct accounts among the first min(requests, accounts) requests: all of them when oldest goes first. */
  firstCycleDistinct: number;
  changes: number;
  changedEvents: number;
};

const steamIdOf = (index: number) => String(76561198200000000n + BigInt(index));

async function seed(sql: Sql, fake: SteamFake): Promise<{ workspaceId: string; steamIds: string[] }> {
  const workspace = await adminCreateWorkspace(sql, { name: 'inventory watch bench', tier: 'enterprise' });
  const workspaceId = workspace.id;
  await sql`
    insert into webhook_endpoints (id, workspace_id, url, event_types, secret_ciphertext, secret_key_id, created_at)
    values (gen_random_uuid(), ${workspaceId}, 'https://hook.test/inventory-watch-bench', ${['inventory.changed', 'item.tradable']}::text[], '\\x00', 'bench', now())`;
  const steamIds = Array.from({ length: ACCOUNTS }, (_, index) => steamIdOf(index));
  steamIds.forEach((steamId, index) => {
    fake.setInventory(steamId, inventoryOf(steamId, SPECS, 70_000_000_000n + BigInt(index) * 100n));
  });
  await sql`
    insert into gameplatform_accounts (workspace_id, steam_id, persona_name, connected_at)
    select ${workspaceId}, steam_id, null, now() from unnest(${steamIds}::text[]) as t(steam_id)`;
  return { workspaceId, steamIds };
}

/** Runs the watch in PROCESSES worker processes for `seconds` with `budget` a minute; measured at the fake. */
async function runCase(options: {
  name: string;
  budget: number;
  seconds: number;
  intervalSeconds: number;
  dbUrl: string;
  redisUrl: string;
  fake: SteamFake;
  sql: Sql;
  steamIds: string[];
  workspaceId: string;
  changeEveryMs?: number;
}): Promise<CaseResult> {
  const { fake, sql } = options;
  // Fresh watches (a new baseline each case) and a queue prefix of its own (so its own budget key).
  await sql`delete from inventory_watches`;
  const queuePrefix = `benchiw${process.pid}${options.budget}`;
  removeQueueKeysAtCleanup(options.redisUrl, queuePrefix);
  const env = {
    DATABASE_URL: options.dbUrl,
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: queuePrefix,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    SIGNING_KEY: 'bench-signing-key-0123456789',
    STEAM_COMMUNITY_URL: fake.url,
    STEAM_API_URL: fake.url,
    INVENTORY_WATCH_INTERVAL_SECONDS: String(options.intervalSeconds),
    STEAM_INVENTORY_REQUESTS_PER_MINUTE: String(options.budget),
  };
  const mine = new Set(options.steamIds);
  const firstRequest = fake.inventoryRequests.length;
  const startedAt = Date.now();
  const workers: Spawned[] = [];
  for (let i = 0; i < PROCESSES; i += 1) workers.push(spawnBun(['workers/main.ts', 'maintenance'], env));
  say(`${options.name}: ${PROCESSES} maintenance processes, budget ${options.budget}/min, interval ${options.intervalSeconds} s, ${options.seconds} s`);
  let changes = 0;
  const deadline = startedAt + options.seconds * 1000;
  let nextChange = startedAt + (options.changeEveryMs ?? Infinity);
  while (Date.now() < deadline) {
    for (const worker of workers) if (exitedEarly(worker)) throw new Error(`a maintenance process exited early:\n${worker.output.last.join('\n')}`);
    if (Date.now() >= nextChange) {
      // Something happens in a few inventories: an item arrives in one (the watch must see and send it).
      fake.addItems(options.steamIds[(changes * 37) % options.steamIds.length]!, [{ item: 'Container | Revolution Case' }]);
      changes += 1;
      nextChange += options.changeEveryMs!;
    }
    await sleep(Math.min(1_000, Math.max(10, deadline - Date.now())));
  }
  await Promise.all(workers.map((worker) => stopChild(worker.proc)));
  const requests = fake.inventoryRequests.slice(firstRequest).filter((request) => mine.has(request.steamId));
  const times = requests.map((request) => request.at);
  const perMinute: number[] = [];
  for (let from = startedAt; from < startedAt + options.seconds * 1000; from += WINDOW_MS)
    perMinute.push(times.filter((at) => at >= from && at < from + WINDOW_MS).length);
  const [{ count: changedEvents }] = (await sql<{ count: number }[]>`
    select count(*)::int as count from event_outbox where workspace_id = ${options.workspaceId} and event_type = 'inventory.changed' and created_at >= ${new Date(startedAt)}`) as unknown as [
    { count: number },
  ];
  return {
    name: options.name,
    budget: options.budget,
    seconds: options.seconds,
    requests: requests.length,
    maxInWindow: maxInSlidingWindow(times, WINDOW_MS),
    perMinute,
    accountsRead: new Set(requests.map((request) => request.steamId)).size,
    firstCycleDistinct: new Set(requests.slice(0, options.steamIds.length).map((request) => request.steamId)).size,
    changes,
    changedEvents,
  };
}

const TRADE_SECRET_KEY = Buffer.alloc(32, 0x5e).toString('base64');
const TRADE_PARTNER = '76561198299999999';

type TradeCaseResult = {
  name: string;
  budget: number;
  seconds: number;
  intervalSeconds: number;
  requests: number;
  maxInWindow: number;
  accountsRead: number;
  planted: number;
  reported: number;
  reportedTwice: number;
  /** Seconds from planting to the trade.reversed row, per reversal reported. */
  latencies: number[];
};

/** A second workspace subscribed to trade.reversed whose 500 accounts have owner tokens and one trade each. */
async function seedTrades(sql: Sql, fake: SteamFake): Promise<{ workspaceId: string; accounts: { accountId: string; steamId: string; tradeId: string }[] }> {
  const workspace = await adminCreateWorkspace(sql, { name: 'trade history bench', tier: 'enterprise' });
  await sql`
    insert into webhook_endpoints (id, workspace_id, url, event_types, secret_ciphertext, secret_key_id, created_at)
    values (gen_random_uuid(), ${workspace.id}, 'https://hook.test/trade-history-bench', ${['trade.reversed']}::text[], '\\x00', 'bench', now())`;
  const steamIds = Array.from({ length: ACCOUNTS }, (_, index) => String(76561198400000000n + BigInt(index)));
  const rows = await sql<{ account_id: string; steam_id: string }[]>`
    insert into gameplatform_accounts (workspace_id, steam_id, persona_name, connected_at)
    select ${workspace.id}, steam_id, null, now() from unnest(${steamIds}::text[]) as t(steam_id)
    returning account_id::text as account_id, steam_id`;
  const keyring = SecretKeyring.fromConfig({ WEBHOOK_SECRET_KEY: TRADE_SECRET_KEY, WEBHOOK_SECRET_KEYS_PREVIOUS: [] });
  const accounts = [];
  for (const row of rows.sort((a, b) => Number(a.account_id) - Number(b.account_id))) {
    const token = fake.issueAccessToken(row.steam_id, new Date(Date.now() + 86_400_000));
    await upsertSealedToken(
      sql,
      row.account_id,
      { ...sealSteamToken(keyring, row.account_id, token), expiresAt: new Date(Date.now() + 86_400_000) },
      new Date(),
    );
    const { trade_id } = fake.recordTrade(row.steam_id, { partner: TRADE_PARTNER, receive: [{ item: 'AK-47 | Redline', wear: 0.2, seed: 1 }] });
    accounts.push({ accountId: row.account_id, steamId: row.steam_id, tradeId: trade_id });
  }
  return { workspaceId: workspace.id, accounts };
}

/** Polls the trade history in PROCESSES worker processes for `seconds`; plants reversals per `plant`; measured at the fake. */
async function runTradeCase(options: {
  name: string;
  budget: number;
  seconds: number;
  intervalSeconds: number;
  dbUrl: string;
  redisUrl: string;
  fake: SteamFake;
  sql: Sql;
  workspaceId: string;
  accounts: { accountId: string; steamId: string; tradeId: string }[];
  /** When (s after start) to plant reversals, and in which accounts (indexes). */
  plantAfterSeconds: number;
  plantIn: number[];
}): Promise<TradeCaseResult> {
  const { fake, sql } = options;
  await sql`delete from gameplatform_trade_polls`;
  const queuePrefix = `benchth${process.pid}${options.budget}`;
  removeQueueKeysAtCleanup(options.redisUrl, queuePrefix);
  const env = {
    DATABASE_URL: options.dbUrl,
    REDIS_URL: options.redisUrl,
    QUEUE_PREFIX: queuePrefix,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    SIGNING_KEY: 'bench-signing-key-0123456789',
    STEAM_COMMUNITY_URL: fake.url,
    STEAM_API_URL: fake.url,
    WEBHOOK_SECRET_KEY: TRADE_SECRET_KEY,
    INVENTORY_WATCH_INTERVAL_SECONDS: '600',
    TRADE_HISTORY_INTERVAL_SECONDS: String(options.intervalSeconds),
    STEAM_INVENTORY_REQUESTS_PER_MINUTE: String(options.budget),
  };
  const mine = new Set(options.accounts.map((account) => account.steamId));
  const firstRequest = fake.tradeHistoryRequests.length;
  const startedAt = Date.now();
  const workers: Spawned[] = [];
  for (let i = 0; i < PROCESSES; i += 1) workers.push(spawnBun(['workers/main.ts', 'maintenance'], env));
  say(
    `${options.name}: ${PROCESSES} maintenance processes, budget ${options.budget}/min, trade-history interval ${options.intervalSeconds} s, ${options.seconds} s`,
  );
  const planted = new Map<string, number>();
  const deadline = startedAt + options.seconds * 1000;
  while (Date.now() < deadline) {
    for (const worker of workers) if (exitedEarly(worker)) throw new Error(`a maintenance process exited early:\n${worker.output.last.join('\n')}`);
    if (planted.size === 0 && Date.now() >= startedAt + options.plantAfterSeconds * 1000) {
      // After the polls started (a reversal before an account's poll began is stored, not announced).
      for (const index of options.plantIn) {
        const account = options.accounts[index]!;
        fake.reverseTrade(account.tradeId);
        planted.set(account.tradeId, Date.now());
      }
      say(`${options.name}: ${planted.size} reversals planted`);
    }
    await sleep(Math.min(1_000, Math.max(10, deadline - Date.now())));
  }
  await Promise.all(workers.map((worker) => stopChild(worker.proc)));
  const requests = fake.tradeHistoryRequests.slice(firstRequest).filter((request) => request.steamId !== null && mine.has(request.steamId));
  const events = await sql<{ trade_id: string; created_at: Date }[]>`
    select payload->>'trade_id' as trade_id, created_at from event_outbox
    where workspace_id = ${options.workspaceId} and event_type = 'trade.reversed' and created_at >= ${new Date(startedAt)}`;
  const counts = new Map<string, number>();
  const latencies: number[] = [];
  for (const event of events) {
    counts.set(event.trade_id, (counts.get(event.trade_id) ?? 0) + 1);
    const at = planted.get(event.trade_id);
    if (at !== undefined && counts.get(event.trade_id) === 1) latencies.push((event.created_at.getTime() - at) / 1000);
  }
  return {
    name: options.name,
    budget: options.budget,
    seconds: options.seconds,
    intervalSeconds: options.intervalSeconds,
    requests: requests.length,
    maxInWindow: maxInSlidingWindow(
      requests.map((request) => request.at),
      WINDOW_MS,
    ),
    accountsRead: new Set(requests.map((request) => request.steamId)).size,
    planted: planted.size,
    reported: [...planted.keys()].filter((tradeId) => counts.has(tradeId)).length,
    reportedTwice: [...counts.values()].filter((count) => count > 1).length + [...counts.keys()].filter((tradeId) => !planted.has(tradeId)).length,
    latencies,
  };
}

/** The trade-history part: its table and checks. */
async function benchTradeHistory(sql: Sql, fake: SteamFake, dbUrl: string, redisUrl: string): Promise<{ results: TradeCaseResult[]; checks: Check[] }> {
  // The watch's workspace stops subscribing: only the trade-history poll spends the budget here.
  await sql`update webhook_endpoints set deleted_at = now() where url = 'https://hook.test/inventory-watch-bench'`;
  await sql`delete from inventory_watches`;
  const { workspaceId, accounts } = await seedTrades(sql, fake);
  say(`${ACCOUNTS} accounts with owner tokens and a trade each seeded`);
  const common = { dbUrl, redisUrl, fake, sql, workspaceId, accounts };
  const defaultCase = await runTradeCase({
    ...common,
    name: 'trade history, default budget',
    budget: 20,
    seconds: positiveInt('BENCH_TRADES_DEFAULT_S', 150),
    intervalSeconds: 60,
    // Polls are claimed longest due first, then by account id: these are among the first read.
    plantAfterSeconds: 5,
    plantIn: Array.from({ length: 10 }, (_, index) => 20 + index * 2),
  });
  const highCase = await runTradeCase({
    ...common,
    name: 'trade history, high budget',
    budget: 1_200,
    seconds: positiveInt('BENCH_TRADES_HIGH_S', 90),
    intervalSeconds: 30,
    plantAfterSeconds: 35,
    plantIn: Array.from({ length: 50 }, (_, index) => 1 + index * 10),
  });
  const results = [defaultCase, highCase];
  const quantile = (values: number[], q: number) =>
    values.length === 0 ? '-' : [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor(q * values.length))]!.toFixed(1);
  process.stdout.write(
    `\nTrade history: ${ACCOUNTS} accounts with owner tokens, ${PROCESSES} maintenance processes, GetTradeHistory requests measured at the fake\n` +
      table([
        [
          'case',
          'budget /min',
          'interval (s)',
          'run (s)',
          'requests',
          'max in any 60 s',
          'accounts read',
          'reversals planted',
          'reported once',
          'reported twice or unplanted',
          'latency p50 / max (s)',
        ],
        ...results.map((r) => [
          r.name,
          String(r.budget),
          String(r.intervalSeconds),
          String(r.seconds),
          String(r.requests),
          String(r.maxInWindow),
          String(r.accountsRead),
          String(r.planted),
          String(r.reported),
          String(r.reportedTwice),
          `${quantile(r.latencies, 0.5)} / ${quantile(r.latencies, 1)}`,
        ]),
      ]) +
      '\n',
  );
  const checks: Check[] = results.flatMap((r): Check[] => [
    [`${r.name}: Steam requests in any 60 s window ≤ budget`, r.maxInWindow <= r.budget, `${r.maxInWindow} ≤ ${r.budget}`],
    [`${r.name}: every planted reversal reported`, r.reported === r.planted, `${r.reported} of ${r.planted}`],
    [`${r.name}: none reported twice (nor any not planted)`, r.reportedTwice === 0, `${r.reportedTwice}`],
    [
      `${r.name}: each within two intervals of planting`,
      r.latencies.every((seconds) => seconds <= 2 * r.intervalSeconds),
      `max ${Math.max(0, ...r.latencies).toFixed(1)} s ≤ ${2 * r.intervalSeconds} s`,
    ],
  ]);
  checks.push([`trade history, high budget: every one of the ${ACCOUNTS} accounts read`, highCase.accountsRead === ACCOUNTS, `${highCase.accountsRead}`]);
  return { results, checks };
}

/** The benchmark: prints its table and checks; returns them too (for bench/stream.ts). */
export async function benchInventoryWatch(): Promise<{ results: CaseResult[]; checks: Check[] }> {
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('REDIS_URL is not set; run this through `npm run bench:inventory-watch` (scripts/dev.ts exec)');
  const { url: dbUrl } = await scratchDatabase('inventory_watch');
  const sql = createSql(dbUrl, { max: 3, application: 'bench-inventory-watch' });
  onCleanup(() => sql.end({ timeout: 5 }));
  await migrate(sql, join(repoRoot, 'sql'));
  const fake = await startSteamFake();
  onCleanup(() => fake.stop());
  const { workspaceId, steamIds } = await seed(sql, fake);
  say(`${ACCOUNTS} connected accounts seeded; Steam fake at ${fake.url}`);

  const common = { dbUrl, redisUrl, fake, sql, steamIds, workspaceId };
  const parts = process.env.BENCH_WATCH_PARTS ?? 'watch,trades';
  const results = parts.includes('watch')
    ? [
        await runCase({ ...common, name: 'default budget', budget: 20, seconds: positiveInt('BENCH_WATCH_DEFAULT_S', 150), intervalSeconds: 60 }),
        await runCase({
          ...common,
          name: 'high budget',
          budget: 600,
          seconds: positiveInt('BENCH_WATCH_HIGH_S', 75),
          intervalSeconds: 30,
          changeEveryMs: 2_000,
        }),
      ]
    : [];
  const trades = parts.includes('trades') ? await benchTradeHistory(sql, fake, dbUrl, redisUrl) : { results: [], checks: [] };
  if (results.length === 0) {
    printChecks(trades.checks);
    return { results, checks: trades.checks };
  }
  process.stdout.write(
    `\nInventory watch: ${ACCOUNTS} connected accounts, ${PROCESSES} maintenance processes, Steam requests measured at the fake\n` +
      table([
        [
          'case',
          'budget /min',
          'run (s)',
          'requests',
          'max in any 60 s',
          'per minute (from start)',
          'accounts read',
          'inventories changed',
          'inventory.changed sent',
        ],
        ...results.map((r) => [
          r.name,
          String(r.budget),
          String(r.seconds),
          String(r.requests),
          String(r.maxInWindow),
          r.perMinute.join(' / '),
          String(r.accountsRead),
          String(r.changes),
          String(r.changedEvents),
        ]),
      ]) +
      '\n',
  );
  const checks: Check[] = results.flatMap((r): Check[] => [
    [`${r.name}: Steam requests in any 60 s window ≤ budget`, r.maxInWindow <= r.budget, `${r.maxInWindow} ≤ ${r.budget}`],
    // The watch spends what it may: saturated (every account due), the budget is used, not idle.
    [`${r.name}: the budget is used (≥ 90 % of it in the busiest window)`, r.maxInWindow >= Math.floor(r.budget * 0.9), `${r.maxInWindow} of ${r.budget}`],
    [
      `${r.name}: oldest snapshot first (no account read twice before every account was read once)`,
      r.firstCycleDistinct === Math.min(r.requests, ACCOUNTS),
      `${r.firstCycleDistinct} distinct of the first ${Math.min(r.requests, ACCOUNTS)}`,
    ],
  ]);
  const high = results[1]!;
  checks.push([`high budget: every one of the ${ACCOUNTS} accounts read`, high.accountsRead === ACCOUNTS, `${high.accountsRead}`]);
  // A change to an inventory already read once is sent at its next read (a change before the first read is in the baseline).
  checks.push([
    `high budget: inventory changes during the run are sent`,
    high.changedEvents > 0,
    `${high.changedEvents} inventory.changed for ${high.changes} changed inventories`,
  ]);
  checks.push(...trades.checks);
  printChecks(checks);
  return { results, checks };
}

async function main(): Promise<void> {
  const { checks } = await benchInventoryWatch();
  if (checks.some(([, ok]) => !ok)) process.exitCode = 1;
}

if (import.meta.main) await runBench(main);
