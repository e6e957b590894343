/**
 * HTTP benchmark of the API against a bare Bun.serve baseline: `npm run bench:api`.
 *
 * One run makes a scratch database (`<dev db>_bench_<pid>`, dropped afterwards) with the real
 * catalog and latest prices for it (bench/price-fixtures.ts), creates a benchmark workspace
 * (enterprise, huge budgets) with one all-scopes key, starts the real API (api/main.ts) and a bare
 * Bun.serve (bench/bare-server.ts) as separate processes, measures the API's idle RSS, then loads
 * each target over loopback with autocannon in its own process (so the load generator never shares
 * an event loop with us) and prints throughput, latency, server CPU per request and the targets
 * with pass/fail. Targets: GET /v2/health, GET /v2/me (a metered key check) and GET /v2/prices/{id}
 * (one priced item, answered from the item price cache) against bare, by server CPU per request.
 *
 * Like-for-like baselines: bare Bun.serve with the X-Request-Id every response carries (docs/design.md §6),
 * for /v2/health; bench/bare-metered-server.ts, that plus the metering debit every keyed request must
 * make (docs/design.md §5), for the keyed targets; and Elysia alone (bench/bare-elysia-server.ts), for scale.
 *
 * Environment: DATABASE_URL and REDIS_URL (set by scripts/dev.ts), BENCH_DURATION (seconds per
 * target, default 10), BENCH_WARMUP (seconds of discarded warm-up load per target, default 2),
 * BENCH_ROUNDS (rounds over all targets, default 3; each row is its median round),
 * BENCH_API_CHECKOUT (measure another checkout's API, e.g. a `git worktree` of an older commit),
 * BENCH_CPU_PROF (a directory: the API writes a CPU profile there when it exits).
 */

import { SCOPES } from '../shared/http/scopes.ts';
import { adminCreateKey, adminCreateWorkspace, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import {
  CONNECTIONS,
  DURATION_S,
  freePort,
  load,
  loadRuntimeName,
  positiveInt,
  printChecks,
  type Result,
  removeQueueKeysAtCleanup,
  reportQuietness,
  rssOf,
  runBench,
  say,
  sleep,
  spawnApi,
  spawnServer,
  table,
  WARMUP_S,
  waitReady,
  warnAbnormal,
} from './lib.ts';
import { catalogDatabase, seedLatestPrices } from './price-fixtures.ts';

const IDLE_WAIT_MS = 3_000;
const ROUNDS = positiveInt('BENCH_ROUNDS', 3);

/**
 * Issue 22: every request pays for what every request passes (request id, log context, metrics,
 * errors) before any work, and Elysia itself costs about what bare Bun does, so the gap to bare is
 * ours. Judged by server CPU per request against the bare Bun.serve of the same run (machines differ
 * several-fold in absolute figures; the ratio moves much less): /v2/health at least 85 % of bare
 * (bare's µs / health's µs), /v2/me at most 1.5 × bare (it adds a key check and one metering debit,
 * a share of one batched Redis round trip), /v2/prices/{id} at most 2 × bare; p99 of /v2/me under
 * 10 ms as before. At the start of the issue one machine measured bare 10.0 µs, /v2/health 17.2 µs
 * (58 %), /v2/me 21.5 µs (2.15 ×), /v2/prices/{id} 25.9 µs (2.59 ×).
 */
const TARGETS = { healthShareOfBare: 0.85, meTimesBare: 1.5, priceTimesBare: 2, meP99Ms: 10, idleRssMb: 150 };

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  if (!process.env.DATABASE_URL) throw new Error('DATABASE_URL is not set; run this through `npm run bench:api`');

  // 1. A scratch database with the catalog and a price for most items.
  const { url: dbUrl, sql } = await catalogDatabase('bench-api');
  await seedLatestPrices(sql, new Date());
  const [priced] = await sql<{ catalog_id: string }[]>`
    select catalog_id from catalog_items c where exists (select 1 from latest_prices l where l.catalog_id = c.catalog_id)
    order by md5(catalog_id || 'bench') limit 1`;
  if (!priced) throw new Error('no priced item in the scratch database');

  // 2. A workspace whose budgets never run out during the load, and one key with every scope.
  const workspace = await adminCreateWorkspace(sql, { name: `bench-${new Date().toISOString()}`, tier: 'enterprise' });
  await adminUpdateWorkspace(sql, workspace.id, { budgets: { minute: 1e9, day: 1e9 } });
  const key = await adminCreateKey(sql, { workspaceId: workspace.id, label: 'bench', scopes: [...SCOPES] });
  say(`workspace ${workspace.id}, key ${key.prefix}…; GET /v2/prices/${priced.catalog_id}`);
  const queuePrefix = `benchapi${process.pid}`;
  removeQueueKeysAtCleanup(process.env.REDIS_URL!, queuePrefix);

  // 3 + 4. The API and the bare baseline, each in its own process on the same runtime.
  const [apiPort, barePort] = [await freePort(), await freePort()];
  const api = spawnApi(apiPort, { DATABASE_URL: dbUrl, QUEUE_PREFIX: queuePrefix });
  const bare = spawnServer('bench/bare-server.ts', barePort, {});
  // bare plus the X-Request-Id every response carries (docs/design.md §6): /v2/health's like-for-like baseline.
  const identifiedPort = await freePort();
  const identified = spawnServer('bench/bare-server.ts', identifiedPort, { BARE_REQUEST_ID: '1' });
  const identifiedUrl = `http://127.0.0.1:${identifiedPort}/`;
  const apiBase = `http://127.0.0.1:${apiPort}`;
  const bareUrl = `http://127.0.0.1:${barePort}/`;
  await Promise.all([
    waitReady('API', api, `${apiBase}/v2/health`),
    waitReady('bare server', bare, bareUrl),
    waitReady('bare server with request ids', identified, identifiedUrl),
  ]);
  say(`API pid ${api.proc.pid} on :${apiPort}, bare server pid ${bare.proc.pid} on :${barePort}`);

  // Fail fast (with the body) if the key does not work, rather than benchmarking error responses.
  const priceUrl = `${apiBase}/v2/prices/${priced.catalog_id}`;
  let meBody = '';
  for (const url of [`${apiBase}/v2/me`, priceUrl]) {
    const response = await fetch(url, { headers: { 'x-api-key': key.key } });
    const body = await response.text();
    if (response.status !== 200) throw new Error(`${url} answered ${response.status} before the load: ${body.slice(0, 300)}`);
    if (url === `${apiBase}/v2/me`) meBody = body;
  }

  // The keyed baseline: bare Bun.serve plus the request id and the metering debit every keyed request
  // must make (bench/bare-metered-server.ts), answering with /v2/me's body for the same key.
  const meteredPort = await freePort();
  const metered = spawnServer('bench/bare-metered-server.ts', meteredPort, {
    BARE_KEY: key.key,
    BARE_WORKSPACE_ID: workspace.id,
    BARE_KEY_ID: key.id,
    BARE_MINUTE_BUDGET: String(1e9),
    BARE_DAY_BUDGET: String(1e9),
    BARE_BODY: meBody,
  });
  const meteredUrl = `http://127.0.0.1:${meteredPort}/`;
  await waitReady('bare metered server', metered, meteredUrl, { headers: { 'x-api-key': key.key } });
  // The third: Elysia alone, one route, no plugins: what the framework costs before anything of ours.
  const elysiaPort = await freePort();
  const elysia = spawnServer('bench/bare-elysia-server.ts', elysiaPort, { NODE_ENV: 'production' });
  const elysiaUrl = `http://127.0.0.1:${elysiaPort}/`;
  await waitReady('Elysia alone', elysia, elysiaUrl);
  const healthBody = await (await fetch(`${apiBase}/v2/health`)).text();
  const bareBody = await (await fetch(bareUrl)).text();
  const keysOf = (body: string) => Object.keys(JSON.parse(body) as object).join(',');
  if (keysOf(healthBody) !== keysOf(bareBody)) say(`warning: bare body ${bareBody} is not shaped like /v2/health ${healthBody}`);

  // 5. Idle RSS, after the API has settled (the requests above touched each route once).
  await sleep(IDLE_WAIT_MS);
  const idle = await rssOf(api.proc.pid);
  say(`API idle RSS ${idle.rss.toFixed(1)} MB`);

  // 6. Load, one target at a time, same settings for all, in ROUNDS rounds that take the targets in
  // turn; each target's row is its median round by server CPU per request (this machine's figures
  // move by a fifth between back-to-back runs, and a slow spell then lands on one round of each).
  await reportQuietness();
  const targets: [string, number, string, Record<string, string>][] = [
    ['bare Bun.serve', bare.proc.pid, bareUrl, {}],
    ['bare + request id', identified.proc.pid, identifiedUrl, {}],
    ['bare + id + debit', metered.proc.pid, meteredUrl, { 'x-api-key': key.key }],
    ['Elysia alone', elysia.proc.pid, elysiaUrl, {}],
    ['GET /v2/health', api.proc.pid, `${apiBase}/v2/health`, {}],
    ['GET /v2/me', api.proc.pid, `${apiBase}/v2/me`, { 'x-api-key': key.key }],
    ['GET /v2/prices/{id}', api.proc.pid, priceUrl, { 'x-api-key': key.key }],
  ];
  const rounds: Result[][] = targets.map(() => []);
  for (let round = 1; round <= ROUNDS; round++) {
    say(`round ${round} of ${ROUNDS}`);
    for (const [index, [name, pid, url, headers]] of targets.entries()) rounds[index]!.push(await load(name, pid, url, headers));
  }
  const results = rounds.map((runs) => [...runs].sort((a, b) => a.cpuUsPerRequest - b.cpuUsPerRequest)[Math.floor((runs.length - 1) / 2)]!);
  const after = await rssOf(api.proc.pid);

  // 7. Report.
  const [bareResult, identifiedResult, meteredResult, elysiaResult, health, meResult, priceResult] = results as [
    Result,
    Result,
    Result,
    Result,
    Result,
    Result,
    Result,
  ];
  const share = (result: Result) => result.rps / bareResult.rps;
  const timesBare = (result: Result) => result.cpuUsPerRequest / bareResult.cpuUsPerRequest;
  const timesMetered = (result: Result) => result.cpuUsPerRequest / meteredResult.cpuUsPerRequest;
  process.stdout.write(
    `\n${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARMUP_S} s warm-up, ${ROUNDS} round(s), each row its median round; loopback; ` +
      `load generator: autocannon on ${loadRuntimeName} (1 thread); latency resolution 1 ms\n`,
  );
  process.stdout.write(
    `server CPU µs/req by round: ${rounds.map((runs) => `${runs[0]!.name} ${runs.map((run) => run.cpuUsPerRequest.toFixed(1)).join(' / ')}`).join('; ')}\n\n`,
  );
  process.stdout.write(
    `${table([
      [
        'target',
        'req/s (avg)',
        'p50 ms',
        'p99 ms',
        'req/s % of bare',
        'requests',
        'non-2xx',
        'errors',
        'server CPU µs/req',
        '× bare (CPU)',
        '× bare+id+debit',
        'server CPU',
      ],
      ...results.map((result) => [
        result.name,
        result.rps.toFixed(0),
        String(result.p50),
        String(result.p99),
        `${(share(result) * 100).toFixed(1)} %`,
        String(result.total),
        String(result.non2xx),
        String(result.errors + result.timeouts),
        result.cpuUsPerRequest.toFixed(1),
        timesBare(result).toFixed(2),
        timesMetered(result).toFixed(2),
        `${(result.cpuCores * 100).toFixed(0)} %`,
      ]),
    ])}\n\n`,
  );
  process.stdout.write(
    'server CPU: of the server process alone, during the measured run (100 % = one core; Redis and Postgres not included).\n' +
      'Below ~100 % the server process was not the limit: the load generator (about one core), Redis and anything else\n' +
      'running share the cores. µs/req is the steadier figure when the machine is noisy.\n\n',
  );
  process.stdout.write(`API idle RSS: ${idle.rss.toFixed(1)} MB (after load: ${after.rss.toFixed(1)} MB, peak ${after.peak.toFixed(1)} MB)\n\n`);

  warnAbnormal(results);
  if (api.output.lines > 0) {
    say(`warning: the API logged ${api.output.lines} line(s) at warn or above; the last ones:\n${api.output.last.join('\n')}`);
  }

  const cleanOf = (result: Result) => (result.non2xx === 0 ? '' : `, ${result.non2xx} non-2xx`);
  const checks: [string, boolean, string][] = [
    [
      `/v2/health >= ${TARGETS.healthShareOfBare * 100} % of bare by server CPU per request`,
      1 / timesBare(health) >= TARGETS.healthShareOfBare && health.non2xx === 0,
      `${((1 / timesBare(health)) * 100).toFixed(1)} % (${health.cpuUsPerRequest.toFixed(1)} µs vs ${bareResult.cpuUsPerRequest.toFixed(1)} µs)${cleanOf(health)}`,
    ],
    [
      `/v2/me <= ${TARGETS.meTimesBare} × bare by server CPU per request, p99 < ${TARGETS.meP99Ms} ms`,
      timesBare(meResult) <= TARGETS.meTimesBare && meResult.p99 < TARGETS.meP99Ms && meResult.non2xx === 0,
      `${timesBare(meResult).toFixed(2)} × (${meResult.cpuUsPerRequest.toFixed(1)} µs), p99 ${meResult.p99} ms${cleanOf(meResult)}`,
    ],
    [
      `/v2/prices/{id} <= ${TARGETS.priceTimesBare} × bare by server CPU per request`,
      timesBare(priceResult) <= TARGETS.priceTimesBare && priceResult.non2xx === 0,
      `${timesBare(priceResult).toFixed(2)} × (${priceResult.cpuUsPerRequest.toFixed(1)} µs), p99 ${priceResult.p99} ms${cleanOf(priceResult)}`,
    ],
    [
      `/v2/health >= ${TARGETS.healthShareOfBare * 100} % of bare + request id (the like-for-like baseline; docs/performance.md)`,
      identifiedResult.cpuUsPerRequest / health.cpuUsPerRequest >= TARGETS.healthShareOfBare && health.non2xx === 0,
      `${((identifiedResult.cpuUsPerRequest / health.cpuUsPerRequest) * 100).toFixed(1)} % (${health.cpuUsPerRequest.toFixed(1)} µs vs ${identifiedResult.cpuUsPerRequest.toFixed(1)} µs)`,
    ],
    [
      `/v2/me <= ${TARGETS.meTimesBare} × bare + request id + metering debit (like for like)`,
      timesMetered(meResult) <= TARGETS.meTimesBare && meResult.non2xx === 0,
      `${timesMetered(meResult).toFixed(2)} × (${meResult.cpuUsPerRequest.toFixed(1)} µs vs ${meteredResult.cpuUsPerRequest.toFixed(1)} µs)${cleanOf(meResult)}`,
    ],
    [
      `/v2/prices/{id} <= ${TARGETS.priceTimesBare} × bare + request id + metering debit`,
      timesMetered(priceResult) <= TARGETS.priceTimesBare && priceResult.non2xx === 0,
      `${timesMetered(priceResult).toFixed(2)} × (${priceResult.cpuUsPerRequest.toFixed(1)} µs vs ${meteredResult.cpuUsPerRequest.toFixed(1)} µs)${cleanOf(priceResult)}`,
    ],
    [`API idle RSS < ${TARGETS.idleRssMb} MB`, idle.rss < TARGETS.idleRssMb, `${idle.rss.toFixed(1)} MB`],
  ];
  process.stdout.write(
    `for scale: Elysia alone (one route, no plugins) is ${((1 / timesBare(elysiaResult)) * 100).toFixed(1)} % of bare by server CPU per request ` +
      `(${elysiaResult.cpuUsPerRequest.toFixed(1)} µs); /v2/health is ${((elysiaResult.cpuUsPerRequest / health.cpuUsPerRequest) * 100).toFixed(1)} % of it\n\n`,
  );
  printChecks(checks);
}

await runBench(main);
