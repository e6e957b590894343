/**
 * Developer entry point.
 *
 *   bun scripts/dev.ts start [--procfile]
 *                                      services + migrations + the Procfile's processes (except release), with every
 *                                      worker pool in one process (`bun workers/main.ts <every pool>`), or with
 *                                      --procfile one process per Procfile entry, as deployed
 *   bun scripts/dev.ts test [args…]     services + fresh <db>_test_<pid>_<shard> database (dropped afterwards) + migrations +
 *                                      `bun test args…` (with a JUnit report on the side), then `npm test: N tests in T s;
 *                                      slowest suites: …`; the whole suite runs as 2 shards side by side (TEST_SHARDS=N: N,
 *                                      1: one process), each with its own database and queue prefix, balanced by
 *                                      test/timings.json; picking files always runs one process
 *   bun scripts/dev.ts exec <cmd…>      services + run one command with DATABASE_URL / REDIS_URL set
 * start and test also generate stand-in item files when ITEM_FILES_DIR (default .data/item-files)
 * has no models, and pass ITEM_FILES_DIR on as that absolute directory (tests read it).
 * start, when WEBHOOK_SECRET_KEY is unset, uses a development key it creates once and keeps in
 * .data/webhook-secret-key (WEBHOOK_SECRET_KEY_FILE moves it), so webhooks work after `npm start`;
 * exec passes that key on too when the file exists (the admin CLI's rewrap-webhook-secrets needs it).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { itemFilesStatus } from '../shared/media/item-files.ts';
import { FAKES_SCRIPT, localUpstreamsPlan } from './local-upstreams.ts';
import { argumentsOf, mergeEntries, mergeWorkerEntries, type ProcfileEntry, readProcfile } from './procfile.ts';
import type { Services } from './services.ts';
import { databaseName, dataDir, dropDatabase, ensureChromium, ensureServices, freePort, recreateDatabase, repoRoot } from './services.ts';

const useColor = process.stdout.isTTY === true && !process.env.NO_COLOR;
const COLORS = [36, 33, 32, 35, 34, 91, 92, 93, 94, 95, 96];
const paint = (code: number, s: string): string => (useColor ? `\x1b[${code}m${s}\x1b[0m` : s);

function log(line: string): void {
  console.log(`${paint(90, '[dev]')} ${line}`);
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function usage(): never {
  console.error('usage: bun scripts/dev.ts start [--procfile] | test [bun test args…] | exec <command…>');
  process.exit(2);
}

function childEnv(services: Services, extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  const pathParts = [path.join(repoRoot, 'node_modules', '.bin')];
  if (path.basename(process.execPath) === 'bun') pathParts.push(path.dirname(process.execPath));
  if (env.PATH) pathParts.push(env.PATH);
  env.PATH = pathParts.join(path.delimiter);
  env.DATABASE_URL = services.databaseUrl;
  env.REDIS_URL = services.redisUrl;
  // Bun's allocator (mimalloc) keeps freed pages for a while before returning them; at 0 it returns
  // them at once, which keeps a busy worker's RSS ~20 MB lower (bench/delivery-webhooks.ts).
  env.MIMALLOC_PURGE_DELAY ??= '0';
  return { ...env, ...extra };
}

/** Per-test limit of `npm test` (bunfig.toml says the same for a plain `bun test`). */
const TEST_TIMEOUT_MS = 30_000;
/** `bun` always means the bun running this script; other names are looked up on the child PATH. */
function resolveCommand(argv: string[], env: Record<string, string>): string[] {
  const [cmd, ...args] = argv;
  if (cmd === undefined) usage();
  if (cmd === 'bun') return [process.execPath, ...args];
  if (cmd.includes('/')) return argv;
  const found = Bun.which(cmd, { PATH: env.PATH ?? '' });
  if (!found) throw new Error(`command not found: ${cmd}`);
  return [found, ...args];
}

function exitCodeOf(proc: { exitCode: number | null; signalCode: string | number | null }): number {
  if (proc.exitCode !== null) return proc.exitCode;
  const sig = proc.signalCode;
  if (typeof sig === 'number') return 128 + sig;
  const signals: Record<string, number> = os.constants.signals;
  const num = sig ? signals[sig] : undefined;
  return num !== undefined ? 128 + num : 1;
}

/** Runs a command with inherited stdio; forwards SIGINT/SIGTERM to it while it runs. */
async function runForeground(argv: string[], env: Record<string, string>): Promise<number> {
  const proc = Bun.spawn(resolveCommand(argv, env), {
    cwd: repoRoot,
    env,
    stdin: 'inherit',
    stdout: 'inherit',
    stderr: 'inherit',
  });
  const forward = (sig: NodeJS.Signals) => () => {
    try {
      proc.kill(sig);
    } catch {
      // already gone
    }
  };
  const onInt = forward('SIGINT');
  const onTerm = forward('SIGTERM');
  process.on('SIGINT', onInt);
  process.on('SIGTERM', onTerm);
  try {
    await proc.exited;
  } finally {
    process.off('SIGINT', onInt);
    process.off('SIGTERM', onTerm);
  }
  return exitCodeOf(proc);
}

async function migrate(env: Record<string, string>): Promise<number> {
  if (!fs.existsSync(path.join(repoRoot, 'scripts', 'migrate.ts'))) {
    log('scripts/migrate.ts not found; skipping migrations');
    return 0;
  }
  log('running migrations (bun scripts/migrate.ts)');
  const code = await runForeground(['bun', 'scripts/migrate.ts'], env);
  if (code !== 0) log(`migrations failed (exit ${code})`);
  return code;
}

/**
 * docs/design.md §10: stand-in item files when ITEM_FILES_DIR (default .data/item-files) has no models, so
 * the viewer and renders work after `npm start` / `npm test`. Sets ITEM_FILES_DIR in `env` to the
 * absolute directory, which tests read. The generator keeps every file already there.
 */
async function ensureItemFiles(env: Record<string, string>): Promise<number> {
  const dir = path.resolve(repoRoot, env.ITEM_FILES_DIR || '.data/item-files');
  env.ITEM_FILES_DIR = dir;
  const before = itemFilesStatus(dir);
  if (before.status === 'ok') return 0;
  log(`no item files in ${dir}: generating stand-ins (bun scripts/item-files-generate.ts)`);
  return runForeground(['bun', 'scripts/item-files-generate.ts'], env);
}

/** Where `npm start` keeps its development WEBHOOK_SECRET_KEY. */
function devWebhookKeyFile(): string {
  return path.resolve(repoRoot, process.env.WEBHOOK_SECRET_KEY_FILE || path.join(dataDir, 'webhook-secret-key'));
}

/**
 * docs/design.md §4/§8: webhooks need WEBHOOK_SECRET_KEY. When the environment sets none, the local stack uses
 * a random 32-byte key created on the first start and kept (mode 0600) for the next ones, so stored
 * secrets stay readable across restarts. A configured key always wins. The key is never printed.
 * With `create` false (exec) an existing file is used and none is made.
 */
function useDevWebhookKey(env: Record<string, string>, options: { create: boolean }): void {
  if (env.WEBHOOK_SECRET_KEY) return;
  const file = devWebhookKeyFile();
  const shown = path.relative(repoRoot, file).startsWith('..') ? file : path.relative(repoRoot, file);
  let key: string | undefined;
  try {
    key = fs.readFileSync(file, 'utf8').trim();
  } catch (error) {
    if ((error as { code?: string }).code !== 'ENOENT') throw error;
  }
  if (key !== undefined && Buffer.from(key, 'base64').length !== 32) {
    if (!options.create) return;
    throw new Error(`${shown} does not hold base64 of 32 bytes: delete it to have a new development key made, or set WEBHOOK_SECRET_KEY`);
  }
  if (key === undefined) {
    if (!options.create) return;
    key = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    // 'wx': two starts at once cannot both write one; the loser reads the winner's.
    try {
      fs.writeFileSync(file, `${key}\n`, { mode: 0o600, flag: 'wx' });
      log(`WEBHOOK_SECRET_KEY not set: created a development key in ${shown} (kept for later starts; set WEBHOOK_SECRET_KEY in production)`);
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
      useDevWebhookKey(env, options);
      return;
    }
  } else if (options.create) {
    log(`WEBHOOK_SECRET_KEY not set: using the development key in ${shown}`);
  }
  env.WEBHOOK_SECRET_KEY = key;
}

// ---------------------------------------------------------------------------
// start

async function pipeLines(stream: ReadableStream<Uint8Array>, prefix: string, out: NodeJS.WriteStream): Promise<void> {
  const decoder = new TextDecoder();
  const reader = stream.getReader();
  let buf = '';
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    buf += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      out.write(`${prefix}${buf.slice(0, nl)}\n`);
      buf = buf.slice(nl + 1);
    }
  }
  buf += decoder.decode();
  if (buf) out.write(`${prefix}${buf}\n`);
}

function signalGroup(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(-pid, sig); // children run in their own process group (detached)
  } catch {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

function spawnEntry(entry: ProcfileEntry, prefix: string, env: Record<string, string>) {
  const proc = Bun.spawn(['sh', '-c', `exec ${entry.command}`], {
    cwd: repoRoot,
    env,
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    detached: true,
  });
  const output = Promise.all([pipeLines(proc.stdout, prefix, process.stdout), pipeLines(proc.stderr, prefix, process.stderr)]).catch(() => undefined);
  return { name: entry.name, proc, output, done: false };
}

type Child = ReturnType<typeof spawnEntry>;

function groupAlive(pid: number): boolean {
  try {
    process.kill(-pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Waits until every child's process group is gone (the `sh -c` leader may exit before its command). */
async function waitForGroups(children: Child[], ms: number): Promise<Child[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const alive = children.filter((c) => !c.done || groupAlive(c.proc.pid));
    if (alive.length === 0 || Date.now() >= deadline) return alive;
    await sleep(100);
  }
}

async function stopChildren(children: Child[]): Promise<void> {
  const alive = children.filter((c) => !c.done || groupAlive(c.proc.pid));
  if (alive.length > 0) log(`sending SIGTERM to ${alive.map((c) => c.name).join(', ')}`);
  for (const c of alive) signalGroup(c.proc.pid, 'SIGTERM');
  const leftovers = await waitForGroups(alive, 10_000);
  if (leftovers.length > 0) {
    log(`killing ${leftovers.map((c) => c.name).join(', ')} (still running after 10 s)`);
    for (const c of leftovers) signalGroup(c.proc.pid, 'SIGKILL');
    await waitForGroups(leftovers, 2000);
  }
  await Promise.race([Promise.all(children.map((c) => c.output)), sleep(500)]);
}

async function waitForHttp(url: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      await fetch(url, { signal: AbortSignal.timeout(1_000) });
      return;
    } catch {
      await Bun.sleep(200);
    }
  }
  log(`warning: ${url} did not answer within ${timeoutMs / 1000} s`);
}

async function start(services: Services, options: { procfile: boolean }): Promise<never> {
  const env = childEnv(services);
  // Readable log lines in a terminal; JSON lines for --procfile (as deployed) and when piped (CI).
  if (!options.procfile && process.stdout.isTTY && env.LOG_FORMAT === undefined) env.LOG_FORMAT = 'pretty';
  // Checked before the slow steps, so a bad port value fails at once.
  const planLocalUpstreams = localUpstreamsPlan(process.env);
  const procfile = readProcfile(repoRoot).filter((e) => e.name !== 'release');
  const entries = options.procfile ? procfile : mergeWorkerEntries(procfile);
  if (entries.length === 0) throw new Error('Procfile has no processes to run');

  let shuttingDown = false;
  const children: Child[] = [];

  const shutdown = async (code: number): Promise<never> => {
    shuttingDown = true;
    await stopChildren(children);
    await services.stop();
    process.exit(code);
  };
  let signalled = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (signalled) {
      log(`${sig} again: killing everything now`);
      for (const c of children) signalGroup(c.proc.pid, 'SIGKILL');
      return;
    }
    signalled = true;
    if (shuttingDown) return;
    log(`${sig} received, shutting down`);
    void shutdown(0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const code = await migrate(env);
  if (code !== 0) return shutdown(code);
  if (shuttingDown) return new Promise<never>(() => {});
  log('syncing the catalog (bun scripts/catalog-sync.ts)');
  const synced = await runForeground(['bun', 'scripts/catalog-sync.ts'], env);
  if (synced !== 0) return shutdown(synced);
  const itemFiles = await ensureItemFiles(env);
  if (itemFiles !== 0) return shutdown(itemFiles);
  useDevWebhookKey(env, { create: true });
  if (!env.WEBHOOK_ALLOW_PRIVATE_TARGETS) {
    // The tour's receiver (scripts/webhook-receiver.ts) listens on loopback over http.
    env.WEBHOOK_ALLOW_PRIVATE_TARGETS = 'true';
    log('WEBHOOK_ALLOW_PRIVATE_TARGETS not set: webhooks may target http and loopback/private addresses (development only)');
  }

  // docs/design.md §4/§9/§11/§18: local fakes for the third parties that are not configured.
  const local = await planLocalUpstreams(freePort);
  entries.unshift(...mergeEntries(local.entries, FAKES_SCRIPT, 'fakes'));
  Object.assign(env, local.env);
  for (const note of local.notes) log(note);

  const width = Math.max(...entries.map((e) => e.name.length));
  for (const [i, entry] of entries.entries()) {
    const prefix = `${paint(COLORS[i % COLORS.length] ?? 36, entry.name.padEnd(width))} | `;
    const child = spawnEntry(entry, prefix, env);
    children.push(child);
    void child.proc.exited.then(() => {
      child.done = true;
      const status = child.proc.signalCode ?? `code ${child.proc.exitCode}`;
      if (shuttingDown) {
        log(`${entry.name} exited (${status})`);
        return;
      }
      log(`${entry.name} exited unexpectedly (${status}); stopping the others`);
      void shutdown(1);
    });
    // The fakes answer before the ingest pool's first run asks the simulator for prices.
    const fakes = argumentsOf(entry, FAKES_SCRIPT) ?? [];
    if (fakes.includes('steam-fake')) await waitForHttp(`http://127.0.0.1:${env.STEAM_FAKE_PORT}/openid/login`, 30_000);
    if (fakes.includes('image-fake')) await waitForHttp(`http://127.0.0.1:${env.IMAGE_FAKE_PORT}/_control/requests`, 30_000);
    if (fakes.includes('simulator'))
      await waitForHttp(`http://127.0.0.1:${env.SIMULATOR_PORT}/steam/market/priceoverview/?appid=730&currency=1&market_hash_name=x`, 30_000);
  }

  const port = process.env.PORT || '3000';
  log(`API: http://localhost:${port}  docs: http://localhost:${port}/docs`);
  return new Promise<never>(() => {});
}

/** The shards of a whole-suite `npm test` unless TEST_SHARDS says otherwise. */
const DEFAULT_TEST_SHARDS = 2;

/**
 * How many `bun test` processes a run uses. The whole suite runs as DEFAULT_TEST_SHARDS shards side by
 * side (TEST_SHARDS=N: N of them, TEST_SHARDS=1: one process), each with its own database and queue
 * prefix, so they share nothing but the servers (a suite's scratch database has its own Redis prefix
 * too: test/helpers.ts scratchTestApp). Picking files, a shard, a reporter, a name pattern or bun's own
 * --parallel always runs one process, as asked.
 */
function testShards(rest: string[]): number {
  const filtered = rest.some((arg) => !arg.startsWith('-') || /^--(shard|parallel|reporter|test-name-pattern)/.test(arg) || arg === '-t');
  if (filtered) return 1;
  const raw = process.env.TEST_SHARDS;
  if (raw === undefined || raw === '') return DEFAULT_TEST_SHARDS;
  const asked = Number(raw);
  if (!Number.isInteger(asked) || asked < 1) throw new Error(`TEST_SHARDS=${raw}: expected a whole number of shards, 1 or more`);
  return asked;
}

/** Per-file durations (ms) that balance the shards (bun's --timings format); refreshed by a whole-suite run with UPDATE_TEST_TIMINGS=1. */
const TEST_TIMINGS_FILE = path.join('test', 'timings.json');

/** The suite's files, as `bun test` finds them with no filter: every *.test.*, *_test.*, *.spec.* and *_spec.* outside node_modules and dot directories. */
function testFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(path.join(repoRoot, dir), { withFileTypes: true })) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue;
      const file = dir ? `${dir}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(file);
      else if (/[._](test|spec)\.[cm]?[jt]sx?$/.test(entry.name)) found.push(file);
    }
  };
  walk('');
  return found.sort();
}

function readTimings(): Record<string, number> {
  try {
    const parsed = JSON.parse(fs.readFileSync(path.join(repoRoot, TEST_TIMINGS_FILE), 'utf8')) as { files?: Record<string, number> };
    return parsed.files ?? {};
  } catch {
    return {};
  }
}

/**
 * Splits `files` into `shards` lists of about equal time: longest first, each file to the shard with
 * the least time so far (a file missing from `timesMs`, a new one, counts as the median file). The
 * first shard runs its files longest first, the second shortest first (and so on alternately), so the
 * heaviest suites (end-to-end runs over real processes) of two shards mostly do not run at once.
 * (bun's own `--shard` with `--timings` cuts the files, in path order, where half the recorded time is
 * reached: balanced as well, but it cannot keep the heavy suites apart.)
 */
function planShards(files: string[], timesMs: Record<string, number>, shards: number): { files: string[]; ms: number }[] {
  const known = files
    .map((file) => timesMs[file])
    .filter((ms): ms is number => ms !== undefined)
    .sort((a, b) => a - b);
  const fallback = known[Math.floor(known.length / 2)] ?? 1_000;
  const plan = Array.from({ length: shards }, () => ({ files: [] as string[], ms: 0 }));
  const byTime = files.map((file) => ({ file, ms: timesMs[file] ?? fallback })).sort((a, b) => b.ms - a.ms || (a.file < b.file ? -1 : 1));
  for (const { file, ms } of byTime) {
    const lightest = plan.reduce((least, shard) => (shard.ms < least.ms ? shard : least));
    lightest.files.push(file);
    lightest.ms += ms;
  }
  for (const [index, shard] of plan.entries()) if (index % 2 === 1) shard.files.reverse();
  return plan;
}

/**
 * `bun test` over `rest` in `shards` processes side by side, each with its own fresh database
 * (<db>_test_<pid>_<shard>, dropped afterwards), migrated, and queue prefix, with a JUnit report on
 * the side for the closing summary (`npm test: N tests in T s; slowest suites: …`). One shard runs
 * the caller's selection with its output live; several split the whole suite by test/timings.json
 * (planShards), print each shard's output whole when it ends (under a header), then the counts and
 * the summary over every shard, last, so the closing `N pass` / `N fail` lines are the run's.
 */
async function runTests(services: Services, rest: string[], asked: number): Promise<number> {
  // Never an empty shard: `bun test` without files would run the whole suite.
  const plan = asked > 1 ? planShards(testFiles(), readTimings(), asked).filter((shard) => shard.files.length > 0) : [];
  const shards = Math.max(plan.length, 1);
  const base = databaseName(services.databaseUrl);
  const tmp = (shard: number, suffix: string) => path.join(os.tmpdir(), `npm-test-${process.pid}-${shard}.${suffix}`);
  const runs = Array.from({ length: shards }, (_, index) => ({
    shard: index + 1,
    db: `${base}_test_${process.pid}_${index + 1}`,
    queuePrefix: `test${process.pid}s${index + 1}`,
    junit: tmp(index + 1, 'junit.xml'),
    output: tmp(index + 1, 'log'),
  }));
  // A caller's own --reporter… wins (one shard), and then only the total time is printed.
  const junit = !rest.some((arg) => arg.startsWith('--reporter'));
  const args = testArgs(rest);
  try {
    const envs: Record<string, string>[] = [];
    for (const run of runs) {
      const url = await recreateDatabase(services.databaseUrl, run.db, log);
      const env = childEnv(services, { DATABASE_URL: url, NODE_ENV: 'test', QUEUE_PREFIX: run.queuePrefix });
      const migrated = await migrate(env);
      if (migrated !== 0) return migrated;
      envs.push(env);
    }
    const files = await ensureItemFiles(envs[0]!);
    if (files !== 0) return files;
    for (const env of envs) env.ITEM_FILES_DIR = envs[0]!.ITEM_FILES_DIR!;
    for (const [index, shard] of plan.entries()) {
      log(`shard ${index + 1}/${shards}: ${shard.files.length} files, ~${seconds(shard.ms / 1000)} by ${TEST_TIMINGS_FILE}`);
    }
    log(shards > 1 ? `running ${shards} shards side by side: bun test ${args.join(' ')} <the shard's files>` : `running: bun test ${args.join(' ')}`);
    const startedAt = performance.now();
    const codes = await Promise.all(
      runs.map(async (run, index) => {
        const env = envs[index]!;
        const reportArgs = junit ? ['--reporter=junit', `--reporter-outfile=${run.junit}`] : [];
        // `./` makes each a path, not a name filter that could match other files too.
        const selection = plan[index]?.files.map((file) => `./${file}`) ?? [];
        const argv = ['bun', 'test', ...reportArgs, ...args, ...selection];
        if (shards === 1) return runForeground(argv, env);
        const out = fs.openSync(run.output, 'w');
        try {
          const proc = Bun.spawn(resolveCommand(argv, env), { cwd: repoRoot, env, stdin: 'ignore', stdout: out, stderr: out });
          await proc.exited;
          const code = exitCodeOf(proc);
          console.log(`\n──── shard ${run.shard}/${shards} (exit ${code}, ${seconds((performance.now() - startedAt) / 1000)}) ────`);
          process.stdout.write(fs.readFileSync(run.output, 'utf8'));
          return code;
        } finally {
          fs.closeSync(out);
        }
      }),
    );
    const wall = (performance.now() - startedAt) / 1000;
    const reports = runs.map((run) => run.junit).filter((file) => fs.existsSync(file));
    if (shards > 1) {
      const { tests, failures } = junitCounts(reports);
      console.log(`\n──── all ${shards} shards ────\n ${tests - failures} pass\n ${failures} fail`);
    }
    console.log(testRunSummary(wall, reports, shards > 1 ? `${shards} shards side by side` : undefined));
    if (process.env.UPDATE_TEST_TIMINGS === '1') {
      if (shards > 1 || rest.length === 0) {
        fs.writeFileSync(path.join(repoRoot, TEST_TIMINGS_FILE), `${JSON.stringify({ version: 1, files: fileTimesMs(reports) }, null, 2)}\n`);
        log(`wrote ${TEST_TIMINGS_FILE}`);
      } else {
        log(`UPDATE_TEST_TIMINGS=1: ${TEST_TIMINGS_FILE} left as it is (a selection, not the whole suite)`);
      }
    }
    return codes.find((code) => code !== 0) ?? 0;
  } finally {
    for (const run of runs) {
      fs.rmSync(run.junit, { force: true });
      fs.rmSync(run.output, { force: true });
      await dropDatabase(services.databaseUrl, run.db, log).catch((err: unknown) => log(`could not drop ${run.db}: ${String(err)}`));
      await removeRedisKeys(services.redisUrl, run.queuePrefix).catch((err: unknown) =>
        log(`could not remove ${run.queuePrefix}:* from Redis: ${String(err)}`),
      );
    }
  }
}

/**
 * Removes a test run's Redis keys, which go with its database: those under its queue prefix (queues,
 * snapshot documents, counters) and under the prefixes suites make from it (`<prefix>-idle:…`,
 * `<prefix>x3k9…:…`); not those of another run whose prefix merely starts with it (`…s1` / `…s12`).
 */
async function removeRedisKeys(url: string, prefix: string): Promise<void> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}[^0-9]*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Loaded into every test process first: password hashing done once per input (see the file). */
const TEST_PRELOAD = './test/preload.ts';

/**
 * `bun test`'s arguments: TEST_PRELOAD, and the per-test limit unless the caller passes one (bun 1.4
 * does not read bunfig.toml's [test] timeout: tests died at its 5 s default), then the caller's.
 */
function testArgs(rest: string[]): string[] {
  const timeout = rest.some((arg) => arg.startsWith('--timeout')) ? [] : ['--timeout', String(TEST_TIMEOUT_MS)];
  return ['--preload', TEST_PRELOAD, ...timeout, ...rest];
}

/** Seconds as `437 s`, or `2.5 s` under ten. */
function seconds(s: number): string {
  return `${s >= 10 ? Math.round(s) : s.toFixed(1)} s`;
}

function xmlAttrs(tag: string): Record<string, string> {
  const entities: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" };
  const attrs: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w:-]+)="([^"]*)"/g)) {
    attrs[m[1]!] = m[2]!.replace(/&(amp|lt|gt|quot|apos);/g, (_, e: string) => entities[e]!);
  }
  return attrs;
}

/**
 * `npm test: 1543 tests in 437 s; slowest suites: a.test.ts 61 s, …` — the wall time of `bun test`
 * and, from its JUnit report, the test count and the ten slowest files. A file's <testsuite> time
 * covers its loading, hooks and tests; describe blocks are nested <testsuite>s (with a line=).
 */
function testRunSummary(wallSeconds: number, junitFiles: string[], how?: string): string {
  const total = `in ${seconds(wallSeconds)}${how ? ` (${how})` : ''}`;
  if (junitFiles.length === 0) return `npm test: ${total}`;
  const { tests, failures } = junitCounts(junitFiles);
  const counts = `${tests} tests${failures > 0 ? ` (${failures} failed)` : ''}`;
  const slowest = Object.entries(fileTimesMs(junitFiles))
    .sort((a, b) => b[1] - a[1])
    .slice(0, 10)
    .map(([file, ms]) => `${file.replace(/^test\//, '')} ${seconds(ms / 1000)}`);
  return `npm test: ${counts} ${total}${slowest.length > 0 ? `; slowest suites: ${slowest.join(', ')}` : ''}`;
}

function readReports(junitFiles: string[]): string[] {
  return junitFiles.flatMap((file) => {
    try {
      return [fs.readFileSync(file, 'utf8')];
    } catch {
      return [];
    }
  });
}

/** Tests and failures over JUnit reports (their <testsuites> totals). */
function junitCounts(junitFiles: string[]): { tests: number; failures: number } {
  let tests = 0;
  let failures = 0;
  for (const xml of readReports(junitFiles)) {
    const root = xmlAttrs(/<testsuites\b[^>]*>/.exec(xml)?.[0] ?? '');
    tests += Number(root.tests) || 0;
    failures += Number(root.failures) || 0;
  }
  return { tests, failures };
}

/** Each test file's time (ms) over JUnit reports: a file's <testsuite> covers its loading, hooks and tests; describe blocks are nested <testsuite>s (with a line=). */
function fileTimesMs(junitFiles: string[]): Record<string, number> {
  const files: Record<string, number> = {};
  for (const xml of readReports(junitFiles)) {
    for (const m of xml.matchAll(/<testsuite\b[^>]*>/g)) {
      const a = xmlAttrs(m[0]);
      const file = a.file ?? a.name;
      if (a.line !== undefined || file === undefined || file in files) continue;
      files[file] = Math.round((Number(a.time) || 0) * 1000);
    }
  }
  return files;
}

// ---------------------------------------------------------------------------

async function main(): Promise<void> {
  const [mode, ...rest] = process.argv.slice(2);
  if (mode !== 'start' && mode !== 'test' && mode !== 'exec') usage();
  if (mode === 'exec' && rest.length === 0) usage();
  if (mode === 'start' && rest.some((arg) => arg !== '--procfile')) usage();

  // Until a mode installs its own handlers, a signal must not kill us before
  // the services we started are stopped again.
  let interrupted = false;
  const markInterrupted = () => {
    interrupted = true;
  };
  process.on('SIGINT', markInterrupted);
  process.on('SIGTERM', markInterrupted);

  const services = await ensureServices({ log });
  let code = 1;
  try {
    if (mode !== 'exec') await ensureChromium(log);
    if (interrupted) {
      code = 130;
    } else if (mode === 'start') {
      process.off('SIGINT', markInterrupted);
      process.off('SIGTERM', markInterrupted);
      await start(services, { procfile: rest.includes('--procfile') }); // only returns by throwing; shutdown exits the process
    } else if (mode === 'test') {
      code = await runTests(services, rest, testShards(rest));
    } else {
      const env = childEnv(services);
      useDevWebhookKey(env, { create: false });
      code = await runForeground(rest, env);
    }
  } catch (err) {
    log(`error: ${err instanceof Error ? err.message : String(err)}`);
    code = 1;
  } finally {
    await services.stop();
  }
  process.exit(code);
}

main().catch((err: unknown) => {
  log(`error: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
  process.exit(1);
});
