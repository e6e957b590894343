/**
 * Idle cost of the embedded default: `npm run bench:idle`.
 *
 * Starts the stack exactly as a newcomer's `npm start` does (`bun scripts/dev.ts start`: the API,
 * the worker pools, the market simulator at its 30 s interval and the Steam fake), on a scratch
 * database and its own queue prefix, with no client traffic. Once every source has succeeded a few
 * times (the first full runs and snapshot builds are not idle) it samples, every few seconds, the CPU
 * time and RSS of every process the command started (the `dev.ts` supervisor included) and of the
 * Postgres backends serving the scratch database, then prints each process's share of one core and
 * its RSS, the totals, and the issue-13 targets: own processes < 10 % of a core and < 500 MB RSS
 * (the sum of their RSS averaged over the window; the highest sampled sum is printed too).
 *
 * CPU is counted as CPU time used (/proc/<pid>/stat), not as a share of the machine, so other work
 * on the machine slows the stack down without changing the figure much.
 *
 * Environment: DATABASE_URL / REDIS_URL (set by scripts/dev.ts exec), IDLE_WARMUP_RUNS (successful
 * runs per source before measuring, default 3), IDLE_SETTLE_SECONDS (wait after that, default 30),
 * IDLE_SECONDS (measured window, default 300: one cycle of the marketplaces' local 300 s schedule), IDLE_SAMPLE_SECONDS (default 3), and any of the
 * stack's own settings (e.g. `npm run bench:idle -- --procfile` measures one process per Procfile entry).
 */

import { mkdtempSync, rmSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createSql, type Sql } from '../shared/platform/db.ts';
import { SOURCE_NAMES } from '../shared/platform/source-names.ts';
import { ADAPTERS } from '../shared/sources/index.ts';
import { isKnownSource } from '../shared/sources/settings.ts';
import {
  freePort,
  onCleanup,
  positiveInt,
  printChecks,
  removeQueueKeysAtCleanup,
  reportQuietness,
  runBench,
  say,
  scratchDatabase,
  sleep,
  spawnBun,
  table,
} from './lib.ts';

const WARMUP_RUNS = positiveInt('IDLE_WARMUP_RUNS', 3);
const SETTLE_S = positiveInt('IDLE_SETTLE_SECONDS', 30);
// One whole cycle of the slowest local schedule (the marketplaces' 300 s), so each source's runs are in it.
const MEASURE_S = positiveInt('IDLE_SECONDS', 300);
const SAMPLE_S = positiveInt('IDLE_SAMPLE_SECONDS', 3);
const START_TIMEOUT_MS = 300_000;
const TICK_MS = 10; // /proc/<pid>/stat counts 100 Hz ticks
const TARGETS = { cpuCores: 0.1, rssMb: 500 };

type ProcSample = { pid: number; ppid: number; comm: string; ticks: number; childTicks: number };

async function readProc(pid: number): Promise<ProcSample | null> {
  try {
    const stat = await Bun.file(`/proc/${pid}/stat`).text();
    const close = stat.lastIndexOf(')');
    const comm = stat.slice(stat.indexOf('(') + 1, close);
    const fields = stat.slice(close + 2).split(' ');
    // After "pid (comm) ": ppid fields[1], utime [11], stime [12], cutime [13], cstime [14].
    return {
      pid,
      ppid: Number(fields[1]),
      comm,
      ticks: Number(fields[11]) + Number(fields[12]),
      childTicks: Number(fields[13]) + Number(fields[14]),
    };
  } catch {
    return null;
  }
}

async function rssMbOf(pid: number): Promise<number> {
  try {
    const status = await Bun.file(`/proc/${pid}/status`).text();
    const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0;
  }
}

async function cmdlineOf(pid: number): Promise<string> {
  try {
    return (await Bun.file(`/proc/${pid}/cmdline`).text()).split('\0').filter(Boolean).join(' ');
  } catch {
    return '';
  }
}

/** Every live descendant of `root` (and root itself). */
async function processTree(root: number): Promise<ProcSample[]> {
  const all: ProcSample[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const sample = await readProc(Number(entry));
    if (sample) all.push(sample);
  }
  const byParent = new Map<number, ProcSample[]>();
  for (const sample of all) byParent.set(sample.ppid, [...(byParent.get(sample.ppid) ?? []), sample]);
  const tree: ProcSample[] = [];
  const queue = all.filter((sample) => sample.pid === root);
  while (queue.length > 0) {
    const next = queue.shift()!;
    tree.push(next);
    queue.push(...(byParent.get(next.pid) ?? []));
  }
  return tree;
}

/** A readable name for a process of the stack: its script and arguments, shortened. */
function labelOf(cmdline: string, comm: string): string {
  const script = /(?:scripts|api|workers|test\/fakes|bench)\/[\w./-]+\.ts(?: [^-][\w ,-]*)?/.exec(cmdline)?.[0];
  if (script) return script.replace(/^test\/fakes\//, '').trim();
  if (/chrom/i.test(comm)) return `chromium (${comm})`;
  return comm;
}

type Account = { label: string; cpuTicks: number; rssSum: number; rssMax: number; samples: number; lastTicks: number };

async function main(): Promise<void> {
  const redisUrl = process.env.REDIS_URL;
  if (!redisUrl) throw new Error('REDIS_URL is not set; run this through `npm run bench:idle`');
  await reportQuietness();
  const database = await scratchDatabase('idle');
  const queuePrefix = `idle${process.pid}`;
  removeQueueKeysAtCleanup(redisUrl, queuePrefix);
  const blobDir = mkdtempSync(join(tmpdir(), 'idle-blobs-'));
  onCleanup(() => rmSync(blobDir, { recursive: true, force: true }));
  const port = await freePort();

  const extraArgs = process.argv.slice(2);
  say(`starting the stack: bun scripts/dev.ts start ${extraArgs.join(' ')} (API on :${port}, queue prefix ${queuePrefix})`);
  const stack = spawnBun(['scripts/dev.ts', 'start', ...extraArgs], {
    DATABASE_URL: database.url,
    REDIS_URL: redisUrl,
    PORT: String(port),
    QUEUE_PREFIX: queuePrefix,
    BLOB_DIR: blobDir,
  });
  const sql: Sql = createSql(database.url, { max: 1, application: 'bench-idle' });
  onCleanup(() => sql.end({ timeout: 5 }));

  // 1. Wait until every source has succeeded WARMUP_RUNS times: the first full runs are not idle.
  const deadline = Date.now() + START_TIMEOUT_MS;
  for (;;) {
    if (stack.proc.exitCode !== null) throw new Error(`npm start exited (${stack.proc.exitCode}):\n${stack.output.last.join('\n')}`);
    if (Date.now() > deadline)
      throw new Error(`sources did not succeed ${WARMUP_RUNS} times within ${START_TIMEOUT_MS / 1000} s:\n${stack.output.last.join('\n')}`);
    // Price sources only: readers with runs of their own (skinport's sales history) are not counted.
    const runs = (
      await sql<{ source: string; succeeded: number }[]>`
      select source, count(*)::int as succeeded from ingest_runs where status = 'succeeded' group by source`.catch(() => [])
    ).filter((run) => isKnownSource(run.source));
    // Bulk sources (all but steam) run every 300 s against the simulator (shared/sources/settings.ts):
    // their first (full) run is past once they have succeeded once.
    const wanted = (source: string) => (isKnownSource(source) && !ADAPTERS[source].needsNames ? 1 : WARMUP_RUNS);
    if (runs.length === SOURCE_NAMES.length && runs.every((run) => run.succeeded >= wanted(run.source))) {
      say(`every source has succeeded (${runs.map((run) => `${run.source} ${run.succeeded}`).join(', ')})`);
      break;
    }
    await sleep(2_000);
  }
  say(`settling for ${SETTLE_S} s, then measuring for ${MEASURE_S} s (a sample every ${SAMPLE_S} s)`);
  await sleep(SETTLE_S * 1000);

  // 2. Sample the process tree and the database's backends.
  const [self] = await sql<{ pid: number }[]>`select pg_backend_pid() as pid`;
  const ownBackend = self!.pid;
  const own = new Map<number, Account>();
  const backends = new Map<number, Account>();
  const account = async (into: Map<number, Account>, sample: ProcSample, label: () => Promise<string>, countAll: boolean) => {
    const ticks = sample.ticks + sample.childTicks;
    let entry = into.get(sample.pid);
    if (!entry) {
      // Seen for the first time: a process that appeared mid-window counts from its start.
      entry = { label: await label(), cpuTicks: countAll ? ticks : 0, rssSum: 0, rssMax: 0, samples: 0, lastTicks: ticks };
      into.set(sample.pid, entry);
    }
    entry.cpuTicks += ticks - entry.lastTicks;
    entry.lastTicks = ticks;
    const rss = await rssMbOf(sample.pid);
    entry.rssSum += rss;
    entry.rssMax = Math.max(entry.rssMax, rss);
    entry.samples += 1;
    return rss;
  };
  const totalRss: number[] = [];
  // Snapshots are pruned to the newest few: count builds by id.
  const [snapshotsBefore] = await sql<{ id: number }[]>`select coalesce(max(id), 0)::int as id from price_snapshots`;
  const started = performance.now();
  let first = true;
  while (performance.now() - started < MEASURE_S * 1000 || first) {
    let rssNow = 0;
    for (const sample of await processTree(stack.proc.pid)) {
      rssNow += await account(own, sample, async () => labelOf(await cmdlineOf(sample.pid), sample.comm), !first);
    }
    totalRss.push(rssNow);
    const pids = await sql<{ pid: number; backend_type: string }[]>`
      select pid, backend_type from pg_stat_activity where datname = ${database.name} and pid <> ${ownBackend}`;
    for (const backend of pids) {
      const sample = await readProc(backend.pid);
      if (sample) await account(backends, sample, async () => `postgres: ${backend.backend_type}`, !first);
    }
    first = false;
    await sleep(SAMPLE_S * 1000);
  }
  const seconds = (performance.now() - started) / 1000;

  // 3. Report: one row per process (processes with the same label summed), then the totals.
  const group = (accounts: Map<number, Account>) => {
    const rows = new Map<string, { label: string; count: number; cpuTicks: number; rssAvg: number; rssMax: number }>();
    for (const entry of accounts.values()) {
      const row = rows.get(entry.label) ?? { label: entry.label, count: 0, cpuTicks: 0, rssAvg: 0, rssMax: 0 };
      row.count += 1;
      row.cpuTicks += entry.cpuTicks;
      row.rssAvg += entry.samples > 0 ? entry.rssSum / entry.samples : 0;
      row.rssMax += entry.rssMax;
      rows.set(entry.label, row);
    }
    return [...rows.values()].sort((a, b) => b.cpuTicks - a.cpuTicks);
  };
  const core = (ticks: number) => (ticks * TICK_MS) / (seconds * 1000);
  const ownRows = group(own);
  const dbRows = group(backends);
  const ownCpu = core(ownRows.reduce((sum, row) => sum + row.cpuTicks, 0));
  const dbCpu = core(dbRows.reduce((sum, row) => sum + row.cpuTicks, 0));
  const rssAvg = totalRss.reduce((sum, value) => sum + value, 0) / totalRss.length;
  const rssPeak = Math.max(...totalRss);
  const ingest = await sql<{ source: string; runs: number; changed: number }[]>`
    select source, count(*)::int as runs, coalesce(sum(rows_written), 0)::int as changed from ingest_runs
    where status = 'succeeded' and started_at > now() - make_interval(secs => ${seconds}) group by source order by source`;
  const [snapshotsAfter] = await sql<{ id: number }[]>`select coalesce(max(id), 0)::int as id from price_snapshots`;

  process.stdout.write(`\nidle window ${seconds.toFixed(0)} s, no client traffic; CPU as a share of one core, RSS in MiB\n\n`);
  process.stdout.write(
    `${table([
      ['process', 'count', 'CPU', 'RSS avg', 'RSS max'],
      ...ownRows.map((row) => [row.label, String(row.count), `${(core(row.cpuTicks) * 100).toFixed(1)} %`, row.rssAvg.toFixed(0), row.rssMax.toFixed(0)]),
      ['own processes, total', String(own.size), `${(ownCpu * 100).toFixed(1)} %`, rssAvg.toFixed(0), rssPeak.toFixed(0)],
      ...dbRows.map((row) => [row.label, String(row.count), `${(core(row.cpuTicks) * 100).toFixed(1)} %`, '', '']),
      ['postgres backends, total', String(backends.size), `${(dbCpu * 100).toFixed(1)} %`, '', ''],
    ])}\n\n`,
  );
  say(
    `in the window: ${ingest.map((row) => `${row.source} ${row.runs} runs / ${row.changed} rows written`).join(', ')}; ${snapshotsAfter!.id - snapshotsBefore!.id} price snapshots stored`,
  );
  printChecks([
    [
      `own processes' CPU < ${TARGETS.cpuCores * 100} % of a core`,
      ownCpu < TARGETS.cpuCores,
      `${(ownCpu * 100).toFixed(1)} %; Postgres backends ${(dbCpu * 100).toFixed(1)} % more`,
    ],
    // Judged on the sum averaged over the window: a snapshot build or an ingest run lifts the worker for a second or two.
    [
      `own processes' RSS < ${TARGETS.rssMb} MB (sum, averaged over the window)`,
      rssAvg < TARGETS.rssMb,
      `avg ${rssAvg.toFixed(0)} MB, highest sample ${rssPeak.toFixed(0)} MB, over ${own.size} processes`,
    ],
  ]);
}

await runBench(main);
