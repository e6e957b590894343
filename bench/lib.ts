/**
 * Shared plumbing of the benchmarks (bench/*.ts): child processes that are always stopped again,
 * cleanup hooks (SQL clients, scratch databases, in-process servers) run on exit, error and signal,
 * a throwaway database per run, readiness polling, RSS / CPU of a process from /proc, autocannon in
 * its own process, and a plain-text table.
 */
import { readdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { Redis } from 'ioredis';
import { databaseName, dropDatabase, recreateDatabase } from '../scripts/services.ts';
import type { Sql } from '../shared/platform/db.ts';

export const repoRoot = join(import.meta.dir, '..');
export const CONNECTIONS = 50;
export const DURATION_S = positiveInt('BENCH_DURATION', 10);
export const WARMUP_S = positiveInt('BENCH_WARMUP', 2);
export const READY_TIMEOUT_MS = 20_000;

export function positiveInt(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value <= 0) throw new Error(`${name} must be a positive integer number of seconds, not ${raw}`);
  return value;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
export const say = (line: string) => process.stdout.write(`[bench] ${line}\n`);

// ---------------------------------------------------------------------------------------------
// Cleanup: every child process we start, then every registered hook (last registered first), is
// released on exit, on error and on SIGINT/SIGTERM.

export type Child = ReturnType<typeof Bun.spawn>;
const children = new Set<Child>();
const hooks: (() => Promise<unknown> | unknown)[] = [];
let cleaning: Promise<void> | undefined;
let interrupted = false;

/** Registers work for cleanup (after the children are stopped); hooks run last-registered first. */
export function onCleanup(hook: () => Promise<unknown> | unknown): void {
  hooks.push(hook);
}

export function track<T extends Child>(child: T): T {
  children.add(child);
  return child;
}

export function untrack(child: Child): void {
  children.delete(child);
}

/** SIGTERM, then SIGKILL after 5 s; resolves once the child has exited (or 2 s after SIGKILL). */
export async function stopChild(child: Child): Promise<void> {
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

export function cleanup(): Promise<void> {
  cleaning ??= (async () => {
    await Promise.allSettled([...children].map(stopChild));
    children.clear();
    while (hooks.length > 0) {
      const hook = hooks.pop()!;
      try {
        await hook();
      } catch (error) {
        process.stderr.write(`[bench] cleanup: ${error instanceof Error ? error.message : String(error)}\n`);
      }
    }
  })();
  return cleaning;
}

for (const [signal, code] of [
  ['SIGINT', 130],
  ['SIGTERM', 143],
] as const) {
  process.on(signal, () => {
    if (interrupted) return;
    interrupted = true;
    say(`${signal}: stopping servers`);
    void cleanup().finally(() => process.exit(code));
  });
}

/** Runs a benchmark's main: prints an error (not after a signal), sets the exit code, always cleans up. */
export async function runBench(main: () => Promise<void>): Promise<void> {
  try {
    await main();
  } catch (error) {
    // After a signal, the load generator's exit is expected, not an error worth printing.
    if (!interrupted) process.stderr.write(`[bench] error: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

// ---------------------------------------------------------------------------------------------
// A scratch database per run: `<dev database>_bench_<pid>`, dropped at cleanup.

/** `tag` tells apart several scratch databases of one bench process (bench:delivery runs two parts). */
export async function scratchDatabase(tag?: string): Promise<{ name: string; url: string }> {
  const baseUrl = process.env.DATABASE_URL;
  if (!baseUrl) throw new Error('DATABASE_URL is not set; run this through `npm run bench:…` (scripts/dev.ts exec)');
  const name = `${databaseName(baseUrl)}_bench_${process.pid}${tag ? `_${tag}` : ''}`;
  const quiet = () => undefined;
  // Registered before it exists, so an interrupted create is still dropped. BENCH_KEEP_DATABASE=1
  // keeps it for a closer look (drop it by hand afterwards).
  onCleanup(async () => {
    if (process.env.BENCH_KEEP_DATABASE === '1') return say(`kept scratch database ${name} (BENCH_KEEP_DATABASE=1)`);
    await dropDatabase(baseUrl, name, quiet);
    say(`dropped scratch database ${name}`);
  });
  const url = await recreateDatabase(baseUrl, name, quiet);
  say(`scratch database ${name}`);
  return { name, url };
}

/**
 * At cleanup, deletes every Redis key under `<prefix>:` (BullMQ keys of processes started with
 * QUEUE_PREFIX=<prefix>; API processes create queue metadata there too). Use a prefix unique to
 * this run, e.g. `bench<pid>`: nothing else may live under it.
 */
export function removeQueueKeysAtCleanup(redisUrl: string, prefix: string): void {
  onCleanup(async () => {
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
    try {
      await redis.connect();
      let removed = 0;
      let cursor = '0';
      do {
        const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
        cursor = next;
        if (keys.length > 0) removed += await redis.del(...keys);
      } while (cursor !== '0');
      say(`removed ${removed} Redis key(s) under QUEUE_PREFIX ${prefix}`);
    } finally {
      redis.disconnect();
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Processes

export function freePort(): Promise<number> {
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
export class OutputTail {
  lines = 0;
  readonly last: string[] = [];

  constructor(private readonly onLine?: (line: string) => void) {}

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
    this.onLine?.(line);
    this.last.push(line.length > 400 ? `${line.slice(0, 400)}…` : line);
    if (this.last.length > 10) this.last.shift();
  }
}

export type Spawned = { proc: Child; output: OutputTail; startedAt: number };

/**
 * `bun <args…>` from the repo root with extra environment; output drained (and seen line by line by
 * `onLine`). A worker serves its metrics on a free port (WORKER_METRICS_PORT=0) unless `extraEnv`
 * says otherwise: a bench's processes never take a pool's documented port from a running stack or
 * from each other.
 */
export function spawnBun(args: string[], extraEnv: Record<string, string>, onLine?: (line: string) => void): Spawned {
  const output = new OutputTail(onLine);
  const startedAt = performance.now();
  const proc = Bun.spawn([process.execPath, ...args], {
    cwd: repoRoot,
    env: { ...process.env, WORKER_METRICS_PORT: '0', ...extraEnv },
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  track(proc);
  output.drain(proc.stdout);
  output.drain(proc.stderr);
  return { proc, output, startedAt };
}

export type SpawnedServer = Spawned & { port: number };

export function spawnServer(script: string, port: number, extraEnv: Record<string, string>): SpawnedServer {
  return { ...spawnBun([script], { ...extraEnv, PORT: String(port) }), port };
}

/**
 * The API as every bench runs it: production mode, warnings only, a fixed signing key; `env` adds
 * the database, Redis, queue prefix and whatever the bench varies.
 */
export function spawnApi(port: number, env: Record<string, string>): SpawnedServer {
  // BENCH_API_CHECKOUT: another checkout's API (its api/main.ts, this checkout's node_modules), for
  // before/after figures from one machine in one session.
  const main = process.env.BENCH_API_CHECKOUT ? `${process.env.BENCH_API_CHECKOUT.replace(/\/+$/, '')}/api/main.ts` : 'api/main.ts';
  // BENCH_CPU_PROF=<dir>: the API writes a CPU profile there when it exits (.cpuprofile and a markdown summary).
  const profile = process.env.BENCH_CPU_PROF ? ['--cpu-prof', '--cpu-prof-md', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`, '--cpu-prof-interval=100'] : [];
  const spawned = spawnBun([...profile, main], {
    LOG_LEVEL: 'warn',
    NODE_ENV: 'production',
    SIGNING_KEY: 'bench-signing-key-0123456789',
    ...env,
    PORT: String(port),
  });
  return { ...spawned, port };
}

export function exitedEarly(spawned: Spawned): boolean {
  return spawned.proc.exitCode !== null || spawned.proc.signalCode !== null;
}

export async function waitReady(name: string, server: Spawned, url: string, init: RequestInit = {}): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastProblem = 'no answer yet';
  while (Date.now() < deadline) {
    if (exitedEarly(server)) {
      throw new Error(`${name} exited (${server.proc.signalCode ?? `code ${server.proc.exitCode}`}) before it was ready:\n${server.output.last.join('\n')}`);
    }
    try {
      const response = await fetch(url, { ...init, signal: AbortSignal.timeout(1_000) });
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
export async function rssOf(pid: number): Promise<{ rss: number; peak: number }> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  const field = (name: string) => {
    const match = new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status);
    if (!match) throw new Error(`no ${name} in /proc/${pid}/status`);
    return Number(match[1]) / 1024;
  };
  return { rss: field('VmRSS'), peak: field('VmHWM') };
}

/** CPU time (user + system) a process has used so far, in ms; /proc/<pid>/stat counts 100 Hz ticks. */
export async function cpuMsOf(pid: number): Promise<number> {
  const stat = await Bun.file(`/proc/${pid}/stat`).text();
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // After "pid (comm) ": state is fields[0], utime fields[11], stime fields[12].
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/**
 * CPU time (ms) used so far by every process named `comm` (e.g. postgres, redis-server): live ones,
 * plus what their parents have reaped (cutime/cstime), so short-lived children such as Postgres's
 * parallel workers are counted too. Processes we cannot read are skipped.
 */
export async function cpuMsOfCommand(comm: string): Promise<number> {
  let ticks = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = await Bun.file(`/proc/${entry}/stat`).text();
    } catch {
      continue;
    }
    const open = stat.indexOf('(');
    const close = stat.lastIndexOf(')');
    if (stat.slice(open + 1, close) !== comm) continue;
    const fields = stat.slice(close + 2).split(' ');
    // utime, stime, cutime, cstime
    ticks += Number(fields[11]) + Number(fields[12]) + Number(fields[13]) + Number(fields[14]);
  }
  return ticks * 10;
}

/** Share of the machine's CPU (all cores) busy over `ms`, from /proc/stat: a check that nothing else is running. */
export async function machineBusy(ms = 1_000): Promise<number> {
  const read = async () => {
    const fields = (await Bun.file('/proc/stat').text()).split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    const idle = fields[3]! + (fields[4] ?? 0);
    return { idle, total: fields.reduce((sum, value) => sum + value, 0) };
  };
  const before = await read();
  await sleep(ms);
  const after = await read();
  const total = after.total - before.total;
  return total > 0 ? 1 - (after.idle - before.idle) / total : 0;
}

/** Says how busy the machine is before a measurement, and warns when something else is using it. */
export async function reportQuietness(): Promise<void> {
  const busy = await machineBusy();
  const cores = navigator.hardwareConcurrency;
  say(
    `machine: ${cores} cores, ${(busy * 100).toFixed(0)} % busy over 1 s before the load${busy > 0.15 ? ' — warning: something else is running; numbers will be noisy' : ''}`,
  );
}

// ---------------------------------------------------------------------------------------------
// Load

export type Result = {
  name: string;
  connections: number;
  /** The server process's CPU during the measured run: µs per request, and share of one core. */
  cpuUsPerRequest: number;
  cpuCores: number;
  /** Every postgres process's CPU during the measured run, in cores (same machine, loopback). */
  dbCpuCores: number;
  /** The server process's VmRSS and VmHWM (peak so far) right after the measured run, in MiB. */
  serverRssMb: number;
  serverPeakMb: number;
  rps: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  total: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  /** Response bytes per second (average), as autocannon counts them (headers and body). */
  throughputBytes: number;
  statusCodes: Record<string, { count: number }>;
};

const autocannonScript = join(repoRoot, 'node_modules', 'autocannon', 'autocannon.js');
// Node runs autocannon if it is installed; otherwise this same Bun does.
export const loadRuntime = Bun.which('node') ?? process.execPath;
export const loadRuntimeName = Bun.which('node') ? 'node' : 'bun';

export type LoadOptions = {
  connections?: number;
  /**
   * A HAR file (see harFile) whose requests each connection sends in turn, instead of `url` alone;
   * `url` must still name the same origin.
   */
  har?: string;
  /** Seconds of load (default BENCH_DURATION). */
  seconds?: number;
};

/** The part of autocannon's `--json` result that load() reads. */
export type AutocannonResult = {
  duration: number;
  requests: { total: number; average: number };
  latency: { p50: number; p90: number; p99: number; max: number };
  non2xx: number;
  errors: number;
  timeouts: number;
  throughput?: { average: number };
  statusCodeStats?: Record<string, { count: number }>;
};

export async function autocannon(url: string, seconds: number, headers: Record<string, string>, options: LoadOptions = {}): Promise<AutocannonResult> {
  const args = [autocannonScript, '--json', '--no-progress', '-c', String(options.connections ?? CONNECTIONS), '-d', String(seconds)];
  for (const [name, value] of Object.entries(headers)) args.push('-H', `${name}=${value}`);
  if (options.har) args.push('--har', options.har);
  args.push(url);
  const proc = track(Bun.spawn([loadRuntime, ...args], { cwd: repoRoot, stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' }));
  try {
    const [stdout, stderr, code] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text(), proc.exited]);
    if (code !== 0) throw new Error(`autocannon exited with ${code}: ${stderr.trim()}`);
    const lastLine = stdout.trim().split('\n').at(-1);
    if (!lastLine) throw new Error(`autocannon printed no result: ${stderr.trim()}`);
    return JSON.parse(lastLine) as AutocannonResult;
  } finally {
    untrack(proc);
  }
}

/** Warm-up (BENCH_WARMUP s, discarded), then BENCH_DURATION s measured, with the server's CPU over the measured run. */
export async function load(name: string, serverPid: number, url: string, headers: Record<string, string> = {}, options: LoadOptions = {}): Promise<Result> {
  if (WARMUP_S > 0) await autocannon(url, WARMUP_S, headers, options);
  const seconds = options.seconds ?? DURATION_S;
  say(`${name}: ${options.connections ?? CONNECTIONS} connections for ${seconds} s`);
  const [cpuBefore, dbBefore] = [await cpuMsOf(serverPid), await cpuMsOfCommand('postgres')];
  const raw = await autocannon(url, seconds, headers, options);
  const cpuMs = (await cpuMsOf(serverPid)) - cpuBefore;
  const dbMs = (await cpuMsOfCommand('postgres')) - dbBefore;
  const memory = await rssOf(serverPid);
  return {
    name,
    connections: options.connections ?? CONNECTIONS,
    cpuUsPerRequest: raw.requests.total > 0 ? (cpuMs * 1000) / raw.requests.total : 0,
    cpuCores: cpuMs / (raw.duration * 1000),
    dbCpuCores: dbMs / (raw.duration * 1000),
    serverRssMb: memory.rss,
    serverPeakMb: memory.peak,
    rps: raw.requests.average,
    p50: raw.latency.p50,
    p90: raw.latency.p90,
    p99: raw.latency.p99,
    max: raw.latency.max,
    total: raw.requests.total,
    non2xx: raw.non2xx,
    errors: raw.errors,
    timeouts: raw.timeouts,
    throughputBytes: raw.throughput?.average ?? 0,
    statusCodes: raw.statusCodeStats ?? {},
  };
}

/** Writes a HAR file of GET requests (for `--har`: each autocannon connection cycles through them). */
export async function harFile(path: string, urls: string[], headers: Record<string, string> = {}): Promise<string> {
  const headerList = Object.entries(headers).map(([name, value]) => ({ name, value }));
  const har = {
    log: { version: '1.2', creator: { name: 'bench', version: '1' }, entries: urls.map((url) => ({ request: { method: 'GET', url, headers: headerList } })) },
  };
  await Bun.write(path, JSON.stringify(har));
  return path;
}

/** A warning line per result that saw non-2xx answers, errors or timeouts. */
export function warnAbnormal(results: Result[]): void {
  for (const result of results) {
    if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
      const codes = Object.entries(result.statusCodes)
        .map(([code, stats]) => `${code}×${stats.count}`)
        .join(', ');
      say(`warning: ${result.name}: ${result.non2xx} non-2xx (${codes}), ${result.errors} errors, ${result.timeouts} timeouts`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Report

export function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  const line = (row: string[]) => row.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!))).join('  ');
  return [line(rows[0]!), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.slice(1).map(line)].join('\n');
}

export function printChecks(checks: [string, boolean, string][]): void {
  process.stdout.write('targets:\n');
  for (const [label, ok, actual] of checks) process.stdout.write(`  ${ok ? 'PASS' : 'FAIL'}  ${label}  (${actual})\n`);
}

export type DrainedOptions = { requests: number; parallel: number; rounds: number };

/**
 * Server CPU (µs) per request for each target, fetched `requests` times per round by
 * `curl --parallel` (its own process) with Accept-Encoding: br, the targets taking turns for `rounds`
 * rounds so a busy moment of the machine does not land on one of them only; null when curl is not
 * installed. Clients that drain the body as fast as loopback allows: autocannon's one thread reads
 * a multi-megabyte list slowly and in many small writes.
 */
export async function drainedCpu(targets: [string, number, string][], scratch: string, options: DrainedOptions): Promise<Record<string, number> | null> {
  if (!Bun.which('curl')) return null;
  const cpuMs: Record<string, number> = {};
  const configs = new Map<string, string>();
  for (const [name, , url] of targets) {
    const config = join(scratch, `${name.replace(/\W+/g, '_')}.curl`);
    await Bun.write(config, `header = "accept-encoding: br"\n${`url = "${url}"\noutput = /dev/null\n`.repeat(options.requests)}`);
    configs.set(name, config);
    cpuMs[name] = 0;
  }
  const run = async (name: string) => {
    // The exit status tells failures apart; curl's parallel progress meter would only clutter the report.
    const status = await Bun.spawn(['curl', '--silent', '--fail', '--parallel', '--parallel-max', String(options.parallel), '--config', configs.get(name)!], {
      stdout: 'ignore',
      stderr: 'ignore',
    }).exited;
    if (status !== 0) throw new Error(`curl against ${name} exited with ${status}`);
  };
  for (const [name] of targets) await run(name); // warm-up
  for (let round = 0; round < options.rounds; round += 1) {
    for (const [name, pid] of targets) {
      const before = await cpuMsOf(pid);
      await run(name);
      cpuMs[name]! += (await cpuMsOf(pid)) - before;
    }
  }
  return Object.fromEntries(Object.entries(cpuMs).map(([name, ms]) => [name, (ms * 1000) / (options.requests * options.rounds)]));
}

/**
 * The rows of `query` as COPY text. Piped, not read with for-await: after a large COPY TO read that way,
 * postgres.js (3.4.9) left its connection unusable and the next query never ran.
 */
export async function copyOut(sql: Sql, query: string): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const collect = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk);
      done();
    },
  });
  await pipeline(await sql.unsafe(`copy (${query}) to stdout`).readable(), collect);
  return Buffer.concat(chunks);
}

/** Truncates `tables` and COPYs `data` (COPY text per table) back into them in one transaction; the COPYs and the commit are timed (ms). */
export async function copyIn(sql: Sql, tables: readonly string[], data: ReadonlyMap<string, Buffer>): Promise<number> {
  let started = 0;
  await sql.begin(async (tx) => {
    await tx.unsafe(`truncate ${tables.join(', ')}`);
    started = performance.now();
    for (const table of tables) await pipeline(Readable.from([data.get(table)!]), await tx.unsafe(`copy ${table} from stdin`).writable());
  });
  return performance.now() - started;
}
