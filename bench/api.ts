/**
 * HTTP benchmark of the API against a bare Bun.serve baseline: `npm run bench:api`.
 *
 * One run migrates the database, creates a benchmark workspace (enterprise, huge budgets) with one
 * all-scopes key, starts the real API (api/main.ts) and a bare Bun.serve (bench/bare-server.ts) as
 * separate processes, measures the API's idle RSS, then loads each target over loopback with
 * autocannon in its own process (so the load generator never shares an event loop with us) and
 * prints throughput, latency and the targets with pass/fail.
 *
 * Environment: DATABASE_URL and REDIS_URL (set by scripts/dev.ts), BENCH_DURATION (seconds per
 * target, default 10), BENCH_WARMUP (seconds of discarded warm-up load per target, default 2).
 * Each run leaves one `bench-…` workspace and key behind in the database.
 */
import { join } from 'node:path';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { adminCreateKey, adminCreateWorkspace, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import { migrate } from '../shared/platform/migrate.ts';
import { SCOPES } from '../shared/http/scopes.ts';
import {
  CONNECTIONS,
  DURATION_S,
  freePort,
  load,
  loadRuntimeName,
  onCleanup,
  printChecks,
  repoRoot,
  rssOf,
  runBench,
  say,
  sleep,
  spawnApi,
  spawnServer,
  table,
  type Result,
  waitReady,
  WARMUP_S,
  warnAbnormal,
} from './lib.ts';

const IDLE_WAIT_MS = 3_000;

/**
 * Issue 13: GET /v2/me at most 45 µs of server CPU per request with p99 < 10 ms, set on a machine
 * where the pre-issue code took 73–79 µs and the bare Bun.serve 22–26 µs. Machines differ by more
 * than that: on two other machines the same pre-issue code took 31.9 and 37.1 µs against a bare
 * 6.5 and 9.1 µs, so 45 µs is checked as written, and the fair comparison (the pre-issue code on the
 * same machine, target 45 / 76 ≈ 59 % of it) is made by running this bench on both (README, Usage
 * metering). The multiple of bare's cost is printed for
 * reference only: bare's cost moved 3× between machines while the API's fixed costs (a Redis round
 * trip, more response headers) did not move with it.
 */
const TARGETS = { healthShare: 0.6, meUsPerRequest: 45, meP99Ms: 10, idleRssMb: 150 };

let sql: Sql | undefined;
onCleanup(() => sql?.end({ timeout: 5 }).catch(() => undefined));

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is not set; run this through `npm run bench:api`');

  // 1. Schema.
  sql = createSql(databaseUrl, { max: 2, application: 'bench' });
  const applied = await migrate(sql, join(repoRoot, 'sql'));
  say(applied.length ? `applied migrations ${applied.join(', ')}` : 'database is up to date');

  // 2. A workspace whose budgets never run out during the load, and one key with every scope.
  const workspace = await adminCreateWorkspace(sql, { name: `bench-${new Date().toISOString()}`, tier: 'enterprise' });
  await adminUpdateWorkspace(sql, workspace.id, { budgets: { minute: 1e9, day: 1e9 } });
  const key = await adminCreateKey(sql, { workspaceId: workspace.id, label: 'bench', scopes: [...SCOPES] });
  await sql.end({ timeout: 5 });
  sql = undefined;
  say(`workspace ${workspace.id}, key ${key.prefix}…`);

  // 3 + 4. The API and the bare baseline, each in its own process on the same runtime.
  const [apiPort, barePort] = [await freePort(), await freePort()];
  const api = spawnApi(apiPort, {});
  const bare = spawnServer('bench/bare-server.ts', barePort, {});
  const apiBase = `http://127.0.0.1:${apiPort}`;
  const bareUrl = `http://127.0.0.1:${barePort}/`;
  await Promise.all([waitReady('API', api, `${apiBase}/v2/health`), waitReady('bare server', bare, bareUrl)]);
  say(`API pid ${api.proc.pid} on :${apiPort}, bare server pid ${bare.proc.pid} on :${barePort}`);

  // Fail fast (with the body) if the key does not work, rather than benchmarking error responses.
  const me = await fetch(`${apiBase}/v2/me`, { headers: { 'x-api-key': key.key } });
  const meBody = await me.text();
  if (me.status !== 200) throw new Error(`GET /v2/me answered ${me.status} before the load: ${meBody}`);
  const healthBody = await (await fetch(`${apiBase}/v2/health`)).text();
  const bareBody = await (await fetch(bareUrl)).text();
  const keysOf = (body: string) => Object.keys(JSON.parse(body) as object).join(',');
  if (keysOf(healthBody) !== keysOf(bareBody)) say(`warning: bare body ${bareBody} is not shaped like /v2/health ${healthBody}`);

  // 5. Idle RSS, after the API has settled (the requests above touched each route once).
  await sleep(IDLE_WAIT_MS);
  const idle = await rssOf(api.proc.pid);
  say(`API idle RSS ${idle.rss.toFixed(1)} MB`);

  // 6. Load, one target at a time, same settings for all.
  const results: Result[] = [];
  results.push(await load('bare Bun.serve', bare.proc.pid, bareUrl));
  results.push(await load('GET /v2/health', api.proc.pid, `${apiBase}/v2/health`));
  results.push(await load('GET /v2/me', api.proc.pid, `${apiBase}/v2/me`, { 'x-api-key': key.key }));
  const after = await rssOf(api.proc.pid);

  // 7. Report.
  const [bareResult, health, meResult] = results as [Result, Result, Result];
  const share = (result: Result) => result.rps / bareResult.rps;
  process.stdout.write(
    `\n${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARMUP_S} s warm-up; loopback; ` +
      `load generator: autocannon on ${loadRuntimeName} (1 thread); latency resolution 1 ms\n\n`,
  );
  process.stdout.write(
    `${table([
      ['target', 'req/s (avg)', 'p50 ms', 'p99 ms', '% of bare', 'requests', 'non-2xx', 'errors', 'server CPU µs/req', 'server CPU'],
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

  const timesBare = meResult.cpuUsPerRequest / bareResult.cpuUsPerRequest;
  process.stdout.write(
    `GET /v2/me server CPU per request: ${meResult.cpuUsPerRequest.toFixed(1)} µs = ${timesBare.toFixed(2)} × bare (${bareResult.cpuUsPerRequest.toFixed(1)} µs)\n\n`,
  );
  const meClean = meResult.non2xx === 0 ? '' : `, ${meResult.non2xx} non-2xx`;
  const checks: [string, boolean, string][] = [
    [
      `/v2/health >= ${TARGETS.healthShare * 100} % of bare`,
      share(health) >= TARGETS.healthShare,
      `${(share(health) * 100).toFixed(1)} %`,
    ],
    [
      `/v2/me <= ${TARGETS.meUsPerRequest} µs server CPU per request, p99 < ${TARGETS.meP99Ms} ms`,
      meResult.cpuUsPerRequest <= TARGETS.meUsPerRequest && meResult.p99 < TARGETS.meP99Ms && meResult.non2xx === 0,
      `${meResult.cpuUsPerRequest.toFixed(1)} µs, p99 ${meResult.p99} ms${meClean}`,
    ],
    [`API idle RSS < ${TARGETS.idleRssMb} MB`, idle.rss < TARGETS.idleRssMb, `${idle.rss.toFixed(1)} MB`],
  ];
  printChecks(checks);
}

await runBench(main);
