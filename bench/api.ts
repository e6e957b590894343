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
import { createServer } from 'node:net';
import { join } from 'node:path';
import { createSql, type Sql } from '../shared/db.ts';
import { adminCreateKey, adminCreateWorkspace, adminUpdateWorkspace } from '../shared/identity/admin.ts';
import { migrate } from '../shared/migrate.ts';
import { SCOPES } from '../shared/scopes.ts';

const repoRoot = join(import.meta.dir, '..');
const CONNECTIONS = 50;
const DURATION_S = positiveInt('BENCH_DURATION', 10);
const WARMUP_S = positiveInt('BENCH_WARMUP', 2);
const READY_TIMEOUT_MS = 20_000;
const IDLE_WAIT_MS = 3_000;

const TARGETS = { healthShare: 0.6, meShare: 0.3, meP99Ms: 10, idleRssMb: 150 };

function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer number of seconds, not ${raw}`);
  return value;
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const say = (line: string) => process.stdout.write(`[bench] ${line}\n`);

// ---------------------------------------------------------------------------------------------
// Cleanup: every child process we start, and the SQL client, are released on exit and on error.

type Child = ReturnType<typeof Bun.spawn>;
const children = new Set<Child>();
let sql: Sql | undefined;
let cleaning: Promise<void> | undefined;
let interrupted = false;

async function stopChild(child: Child): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  try {
    child.kill('SIGTERM');
  } catch {
    return;
  }
  const exited = await Promise.race([child.exited.then(() => true), sleep(5_000).then(() => false)]);
  if (!exited) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
    await Promise.race([child.exited, sleep(2_000)]);
  }
}

function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.allSettled([...children].map(stopChild));
    children.clear();
    await sql?.end({ timeout: 5 }).catch(() => undefined);
  })();
  return cleaning;
}

for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143]] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    say(`${signal}: stopping servers`);
    void cleanup().finally(() => process.exit(code));
  });
}

// ---------------------------------------------------------------------------------------------
// Helpers

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => (port ? resolve(port) : reject(new Error('could not find a free port'))));
    });
  });
}

/** Keeps draining a child's output (a full pipe would stall it) and remembers the last lines. */
class OutputTail {
  lines = 0;
  readonly last: string[] = [];

  drain(stream: ReadableStream<Uint8Array>): void {
    void (async () => {
      const decoder = new TextDecoder();
      let buffer = '';
      for await (const chunk of stream) {
        buffer += decoder.decode(chunk, { stream: true });
        let nl: number;
        while ((nl = buffer.indexOf('\n')) >= 0) {
          this.push(buffer.slice(0, nl));
          buffer = buffer.slice(nl + 1);
        }
      }
      if (buffer) this.push(buffer);
    })().catch(() => undefined);
  }

  private push(line: string): void {
    this.lines += 1;
    this.last.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
    if (this.last.length > 10) this.last.shift();
  }
}

function spawnServer(script: string, port: number, extraEnv: Record<string, string>) {
  const output = new OutputTail();
  const proc = Bun.spawn([process.execPath, script], {
    cwd: repoRoot,
    env: { ...process.env, ...extraEnv, PORT: String(port) },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  children.add(proc);
  output.drain(proc.stdout);
  output.drain(proc.stderr);
  return { proc, output, port };
}

async function waitReady(name: string, server: ReturnType<typeof spawnServer>, url: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastProblem = 'no answer yet';
  while (Date.now() < deadline) {
    if (server.proc.exitCode !== null || server.proc.signalCode !== null) {
      throw new Error(`${name} exited (${server.proc.signalCode ?? `code ${server.proc.exitCode}`}) before it was ready:\n${server.output.last.join('\n')}`);
    }
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(1_000) });
      await response.arrayBuffer();
      if (response.status === 200) return;
      lastProblem = `status ${response.status}`;
    } catch (error) {
      lastProblem = (error as Error).message;
    }
    await sleep(100);
  }
  throw new Error(`${name} was not ready within ${READY_TIMEOUT_MS / 1000} s (${lastProblem}):\n${server.output.last.join('\n')}`);
}

/** VmRSS (and VmHWM, the peak) of a process, in MiB. */
async function rssOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    if (!match) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(match[1]) / 1024;
  };
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

/** CPU time (user + system) a process has used so far, in ms; /proc/<pid>/stat counts 100 Hz ticks. */
async function cpuMsOf(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After "pid (comm) ": state is fields[0], utime fields[11], stime fields[12].
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

type Result = {
  name: string;
  /** The server process's CPU during the measured run: µs per request, and share of one core. */
  cpuUsPerRequest: number;
  cpuCores: number;
  rps: number;
  p50: number;
  p99: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCodes: Record<string, { count: number }>;
};

const autocannonScript = join(repoRoot, 'node_modules', 'autocannon', 'autocannon.js');
// Node runs autocannon if it is installed; otherwise this same Bun does.
const loadRuntime = Bun.which('node') ?? process.execPath;

async function autocannon(url: string, seconds: number, headers: Record<string, string>): Promise<Record<string, any>> {
  const args = [autocannonScript, '--json', '--no-progress', '-c', String(CONNECTIONS), '-d', String(seconds)];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  args.push(url);
  const proc = Bun.spawn([loadRuntime, ...args], { cwd: repoRoot, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  children.add(proc);
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`autocannon exited with ${code}: ${stderr.trim()}`);
    const lastLine = stdout.trim().split('\n').at(-1);
    if (!lastLine) throw new Error(`autocannon printed no result: ${stderr.trim()}`);
    return JSON.parse(lastLine) as Record<string, any>;
  } finally {
    children.delete(proc);
  }
}

async function load(name: string, serverPid: number, url: string, headers: Record<string, string> = {}): Promise<Result> {
  if (WARMUP_S > 0) await autocannon(url, WARMUP_S, headers);
  say(`${name}: ${CONNECTIONS} connections for ${DURATION_S} s`);
  const cpuBefore = await cpuMsOf(serverPid);
  const raw = await autocannon(url, DURATION_S, headers);
  const cpuMs = (await cpuMsOf(serverPid)) - cpuBefore;
  return {
    name,
    cpuUsPerRequest: raw.requests.total > 0 ? (cpuMs * 1000) / raw.requests.total : 0,
    cpuCores: cpuMs / (raw.duration * 1000),
    rps: raw.requests.average,
    p50: raw.latency.p50,
    p99: raw.latency.p99,
    total: raw.requests.total,
    non2xx: raw.non2xx,
    errors: raw.errors,
    timeouts: raw.timeouts,
    statusCodes: raw.statusCodeStats ?? {},
  };
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(rows[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

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
  const api = spawnServer('api/main.ts', apiPort, {
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    SIGNING_KEY: 'bench-signing-key-0123456789',
  });
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
      `load generator: autocannon on ${Bun.which('node') ? 'node' : 'bun'} (1 thread); latency resolution 1 ms\n\n`,
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

  for (const result of results) {
    if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
      const codes = Object.entries(result.statusCodes).map(([code, stats]) => `${code}×${stats.count}`).join(', ');
      say(`warning: ${result.name}: ${result.non2xx} non-2xx (${codes}), ${result.errors} errors, ${result.timeouts} timeouts`);
    }
  }
  if (api.output.lines > 0) {
    say(`warning: the API logged ${api.output.lines} line(s) at warn or above; the last ones:\n${api.output.last.join('\n')}`);
  }

  const checks: [string, boolean, string][] = [
    [
      `/v2/health >= ${TARGETS.healthShare * 100} % of bare`,
      share(health) >= TARGETS.healthShare,
      `${(share(health) * 100).toFixed(1)} %`,
    ],
    [
      `/v2/me >= ${TARGETS.meShare * 100} % of bare, p99 < ${TARGETS.meP99Ms} ms`,
      share(meResult) >= TARGETS.meShare && meResult.p99 < TARGETS.meP99Ms && meResult.non2xx === 0,
      `${(share(meResult) * 100).toFixed(1)} %, p99 ${meResult.p99} ms${meResult.non2xx ? `, ${meResult.non2xx} non-2xx` : ''}`,
    ],
    [`API idle RSS < ${TARGETS.idleRssMb} MB`, idle.rss < TARGETS.idleRssMb, `${idle.rss.toFixed(1)} MB`],
  ];
  process.stdout.write('targets:\n');
  for (const [label, ok, actual] of checks) process.stdout.write(`  ${ok ? 'PASS' : 'FAIL'}  ${label}  (${actual})\n`);
}

try {
  await main();
} catch (error) {
  // After a signal, the load generator's exit is expected, not an error worth printing.
  if (!interrupted) process.stderr.write(`[bench] error: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
} finally {
  await cleanup();
}
