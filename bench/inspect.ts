/**
 * Inspect decode benchmark (issue 12 figures): `npm run bench:inspect`.
 *
 * 1. In-process: decodes per second of a real masked AK-47 link with five stickers (the heaviest
 *    public vector), as the bare certificate and as the full steam:// link through the route's own
 *    function, plus validateItemSelector of the answer (what renders and viewer sessions add), and
 *    (issue 20) the decode with itemInsights against without (target >= 80 %), and insights of a
 *    Karambit Fade alone (the fade table is built once per weapon, at its first use).
 * 2. Through the API (api/main.ts in its own process): POST /v2/inspect/decode with that link and
 *    GET /v2/me, each at 50 connections with autocannon, same settings; decode as a share of /v2/me.
 *
 * Environment: DATABASE_URL and REDIS_URL (set by scripts/dev.ts), BENCH_DURATION, BENCH_WARMUP
 * (see bench/lib.ts), BENCH_DECODE_MS (in-process time per case, default 2000).
 * Each run leaves one `bench-inspect-…` workspace and key behind in the database.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeInspectLink } from '../api/routes/inspect.ts';
import { adminCreateKey, adminCreateWorkspace, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import { decodeCertificate, validateItemSelector } from '../shared/inspect/index.ts';
import { itemInsights } from '../shared/inspect/insights.ts';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { migrate } from '../shared/platform/migrate.ts';
import {
  CONNECTIONS,
  DURATION_S,
  freePort,
  load,
  loadRuntimeName,
  onCleanup,
  positiveInt,
  printChecks,
  type Result,
  repoRoot,
  runBench,
  say,
  spawnApi,
  table,
  WARMUP_S,
  waitReady,
  warnAbnormal,
} from './lib.ts';

const TARGETS = { decodesPerSecond: 100_000, decodeShareOfMe: 0.6, insightsShare: 0.8 };
const DECODE_MS = positiveInt('BENCH_DECODE_MS', 2_000);

// vlydev/cs2-masked-inspect vector 1 (test/inspect/inspect-certificate.test.ts): key byte 0xE3, five stickers.
const CERTIFICATE =
  'E3F3367440334DE2FBE4C345E0CBE0D3E7DB6943400AE0A379E481ECEBE2F36FD9DE2BDB515EA6E30D74D981ECEBE3F37BCBDE640D475DA6E35EFCD881ECEBE3F359D5DE37E9D75DA6436DD3DD81ECEBE3F366DCDE3F8F9BDDA69B43B6DE81ECEBE3F33BC8DEBB1CA3DFA623F7DDDF8B71E293EBFD43382B';
const LINK = `steam://rungame/730/76561202255233023/+csgo_econ_action_preview%20${CERTIFICATE}`;

let sql: Sql | undefined;
onCleanup(() => sql?.end({ timeout: 5 }).catch(() => undefined));
const harDir = mkdtempSync(join(tmpdir(), 'bench-inspect-'));
onCleanup(() => rmSync(harDir, { recursive: true, force: true }));

/** Calls `run` in batches for DECODE_MS after a warm-up of a quarter of that; returns calls per second. */
function perSecond(run: () => unknown): number {
  const batch = 1_000;
  const until = (ms: number) => {
    const started = performance.now();
    let calls = 0;
    while (performance.now() - started < ms) {
      for (let i = 0; i < batch; i++) run();
      calls += batch;
    }
    return calls / ((performance.now() - started) / 1000);
  };
  until(DECODE_MS / 4);
  return until(DECODE_MS);
}

async function main(): Promise<void> {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error('DATABASE_URL is not set; run this through `npm run bench:inspect`');

  // 1. In-process.
  const answer = decodeCertificate(CERTIFICATE);
  if (!validateItemSelector(answer).ok) throw new Error('the benchmark vector does not pass validateItemSelector');
  // Issue 20: insights beside the answer. The vector is no fade; a Karambit Fade (definition 507,
  // paint 38) with the vector's seed and wear exercises the fade table too.
  const fade = { item: { ...answer.item, definition_index: 507 }, state: { ...answer.state, paint_index: 38 } };
  if (itemInsights(fade.item, fade.state).fade_percentage === null) throw new Error('the Karambit Fade has no fade percentage');
  const inProcess: [string, number][] = [
    ['decodeCertificate (bare hex, 5 stickers, key 0xE3)', perSecond(() => decodeCertificate(CERTIFICATE))],
    [
      'decodeCertificate + itemInsights (issue 20)',
      perSecond(() => {
        const decoded = decodeCertificate(CERTIFICATE);
        return itemInsights(decoded.item, decoded.state);
      }),
    ],
    ['itemInsights of a Karambit Fade state alone', perSecond(() => itemInsights(fade.item, fade.state))],
    ['parse link + decode (the route’s decodeInspectLink)', perSecond(() => decodeInspectLink(LINK))],
    ['validateItemSelector of the answer', perSecond(() => validateItemSelector(answer))],
  ];
  for (const [name, rate] of inProcess) say(`${name}: ${rate.toFixed(0)}/s`);

  // 2. A workspace whose budgets never run out during the load, and one inspect:read key.
  sql = createSql(databaseUrl, { max: 2, application: 'bench' });
  await migrate(sql, join(repoRoot, 'sql'));
  const workspace = await adminCreateWorkspace(sql, { name: `bench-inspect-${new Date().toISOString()}`, tier: 'enterprise' });
  await adminUpdateWorkspace(sql, workspace.id, { budgets: { minute: 1e9, day: 1e9 } });
  const key = await adminCreateKey(sql, { workspaceId: workspace.id, label: 'bench', scopes: ['inspect:read'] });
  await sql.end({ timeout: 5 });
  sql = undefined;

  const port = await freePort();
  const api = spawnApi(port, {});
  const base = `http://127.0.0.1:${port}`;
  await waitReady('API', api, `${base}/v2/health`);
  const headers = { 'x-api-key': key.key, 'content-type': 'application/json' };
  const check = await fetch(`${base}/v2/inspect/decode`, { method: 'POST', headers, body: JSON.stringify({ link: LINK }) });
  if (check.status !== 200) throw new Error(`POST /v2/inspect/decode answered ${check.status} before the load: ${await check.text()}`);

  // autocannon sends a body only from a HAR entry (bench/lib.ts's load takes GET URLs otherwise).
  const har = join(harDir, 'decode.har');
  await Bun.write(
    har,
    JSON.stringify({
      log: {
        version: '1.2',
        creator: { name: 'bench', version: '1' },
        entries: [
          {
            request: {
              method: 'POST',
              url: `${base}/v2/inspect/decode`,
              headers: Object.entries(headers).map(([name, value]) => ({ name, value })),
              postData: { mimeType: 'application/json', text: JSON.stringify({ link: LINK }) },
            },
          },
        ],
      },
    }),
  );

  const results: Result[] = [];
  results.push(await load('GET /v2/me', api.proc.pid, `${base}/v2/me`, { 'x-api-key': key.key }));
  results.push(await load('POST /v2/inspect/decode', api.proc.pid, `${base}/v2/inspect/decode`, {}, { har }));
  const [me, decode] = results as [Result, Result];

  // 3. Report.
  process.stdout.write(`\nin-process (${DECODE_MS} ms per case after a ${DECODE_MS / 4} ms warm-up, one thread):\n\n`);
  process.stdout.write(`${table([['case', 'per second'], ...inProcess.map(([name, rate]) => [name, rate.toFixed(0)])])}\n\n`);
  process.stdout.write(
    `through the API: ${CONNECTIONS} connections, ${DURATION_S} s per target after ${WARMUP_S} s warm-up; loopback; ` +
      `load generator: autocannon on ${loadRuntimeName} (1 thread); latency resolution 1 ms\n\n`,
  );
  process.stdout.write(
    `${table([
      ['target', 'req/s (avg)', 'p50 ms', 'p99 ms', '% of /v2/me', 'requests', 'non-2xx', 'errors', 'server CPU µs/req', 'server CPU'],
      ...results.map((result) => [
        result.name,
        result.rps.toFixed(0),
        String(result.p50),
        String(result.p99),
        `${((result.rps / me.rps) * 100).toFixed(1)} %`,
        String(result.total),
        String(result.non2xx),
        String(result.errors + result.timeouts),
        result.cpuUsPerRequest.toFixed(1),
        `${(result.cpuCores * 100).toFixed(0)} %`,
      ]),
    ])}\n\n`,
  );
  warnAbnormal(results);
  if (api.output.lines > 0) say(`warning: the API logged ${api.output.lines} line(s) at warn or above; the last ones:\n${api.output.last.join('\n')}`);

  const decodes = inProcess[0]![1];
  const withInsights = inProcess[1]![1];
  printChecks([
    [`in-process decodes >= ${TARGETS.decodesPerSecond}/s`, decodes >= TARGETS.decodesPerSecond, `${decodes.toFixed(0)}/s`],
    [
      `in-process decodes with insights >= ${TARGETS.insightsShare * 100} % of without`,
      withInsights / decodes >= TARGETS.insightsShare,
      `${((withInsights / decodes) * 100).toFixed(1)} %: ${withInsights.toFixed(0)}/s against ${decodes.toFixed(0)}/s`,
    ],
    [
      `POST /v2/inspect/decode >= ${TARGETS.decodeShareOfMe * 100} % of GET /v2/me req/s`,
      decode.rps / me.rps >= TARGETS.decodeShareOfMe && decode.non2xx === 0,
      `${((decode.rps / me.rps) * 100).toFixed(1)} %, p99 ${decode.p99} ms${decode.non2xx ? `, ${decode.non2xx} non-2xx` : ''}`,
    ],
  ]);
}

await runBench(main);
