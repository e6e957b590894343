/**
 * Development/test service bootstrap: makes sure a Postgres and a Redis server
 * are reachable, starting project-local ones under `<repo>/.data/` when the
 * configured (or default) servers are not available.
 *
 * Used by scripts/dev.ts (`npm start`, `npm test`, `npm run migrate|admin`).
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import postgres from 'postgres';

export type Log = (line: string) => void;

export interface Services {
  databaseUrl: string;
  redisUrl: string;
  /** Stops only the servers this call started. Idempotent. */
  stop: () => Promise<void>;
}

export const repoRoot: string = path.resolve(import.meta.dir, '..');
export const dataDir: string = path.join(repoRoot, '.data');

const DEFAULT_DATABASE_URL = 'postgres://postgres@127.0.0.1:5432/cs2';
const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

// ---------------------------------------------------------------------------
// small process helpers

interface RunResult {
  code: number;
  output: string;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function errorCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err) {
    const code = (err as { code: unknown }).code;
    return typeof code === 'string' ? code : undefined;
  }
  return undefined;
}

function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined) env[k] = v;
  return { ...env, ...extra };
}

/**
 * Runs a command and captures stdout+stderr. Does not wait forever for the
 * output pipes: daemons started by the command could keep them open.
 */
async function run(argv: string[], opts: { env?: Record<string, string> } = {}): Promise<RunResult> {
  const proc = Bun.spawn(argv, {
    cwd: repoRoot,
    env: opts.env ?? cleanEnv(),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const chunks: string[] = [];
  const collect = (async () => {
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    chunks.push(out, err);
  })();
  const code = await proc.exited;
  await Promise.race([collect, sleep(1000)]);
  return { code, output: chunks.join('').trim() };
}

async function runChecked(argv: string[], what: string, opts: { env?: Record<string, string> } = {}): Promise<string> {
  const r = await run(argv, opts);
  if (r.code !== 0) throw new Error(`${what} failed (exit ${r.code}): ${argv.join(' ')}\n${r.output}`);
  return r.output;
}

async function runInherit(argv: string[], env: Record<string, string>): Promise<number> {
  const proc = Bun.spawn(argv, { cwd: repoRoot, env, stdin: 'ignore', stdout: 'inherit', stderr: 'inherit' });
  return proc.exited;
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | null = null;
  return () => (p ??= fn());
}

function tailFile(file: string, lines = 20): string {
  try {
    return fs.readFileSync(file, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

function shQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

/** Bind port 0 on 127.0.0.1, read the port the kernel picked, release it. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      if (addr && typeof addr === 'object') {
        const port = addr.port;
        srv.close(() => resolve(port));
      } else {
        srv.close(() => reject(new Error('could not determine a free port')));
      }
    });
  });
}

/** Hides the password of a connection URL for logging. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return url;
  }
}

// ---------------------------------------------------------------------------
// binaries and apt

const PG_TOOLS = new Set(['initdb', 'pg_ctl', 'postgres', 'psql', 'pg_isready', 'createdb', 'dropdb', 'pg_dump', 'pg_restore', 'pg_controldata']);

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Debian's /usr/bin/pg_* wrappers dispatch on clusters; we want the real binaries. */
function isPgWrapper(file: string): boolean {
  try {
    return path.basename(fs.realpathSync(file)) === 'pg_wrapper';
  } catch {
    return false;
  }
}

/** /usr/lib/postgresql/<version>/bin directories, newest version first. */
function pgBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  let versions: string[];
  try {
    versions = fs.readdirSync(root);
  } catch {
    return [];
  }
  return versions
    .filter((v) => /^\d+(\.\d+)?$/.test(v))
    .sort((a, b) => Number.parseFloat(b) - Number.parseFloat(a))
    .map((v) => path.join(root, v, 'bin'))
    .filter((dir) => fs.existsSync(dir));
}

/**
 * Looks a binary up on PATH (then /usr/local/bin, /usr/bin, /usr/sbin);
 * Postgres tools are additionally searched in the newest /usr/lib/postgresql/X/bin.
 */
export function findBinary(name: string): string | null {
  const isPg = PG_TOOLS.has(name);
  const dirs = (process.env.PATH ?? '').split(path.delimiter).filter((d) => d.length > 0);
  for (const extra of ['/usr/local/bin', '/usr/bin', '/usr/sbin']) if (!dirs.includes(extra)) dirs.push(extra);
  for (const dir of dirs) {
    const file = path.join(dir, name);
    if (isExecutable(file) && !(isPg && isPgWrapper(file))) return file;
  }
  if (isPg) {
    for (const dir of pgBinDirs()) {
      const file = path.join(dir, name);
      if (isExecutable(file)) return file;
    }
  }
  return null;
}

let aptUpdated = false;

/**
 * Installs a Debian package: `apt-get update` (once per process) then
 * `apt-get install -y --no-install-recommends PKG`. Requires root.
 */
export async function aptInstall(pkg: string, log: Log): Promise<void> {
  if (!findBinary('apt-get')) {
    throw new Error(`"${pkg}" is needed but apt-get is not available; install ${pkg} manually`);
  }
  if (process.getuid?.() !== 0) {
    throw new Error(
      `"${pkg}" is needed but not installed, and installing it requires root. ` +
        `Run "sudo apt-get install -y ${pkg}" (or point DATABASE_URL / REDIS_URL at running servers).`,
    );
  }
  const env = cleanEnv({ DEBIAN_FRONTEND: 'noninteractive' });
  if (!aptUpdated) {
    log('running: apt-get update');
    const code = await runInherit(['apt-get', 'update'], env);
    if (code !== 0) throw new Error(`apt-get update failed (exit ${code})`);
    aptUpdated = true;
  }
  log(`running: apt-get install -y --no-install-recommends ${pkg}`);
  const code = await runInherit(['apt-get', 'install', '-y', '--no-install-recommends', pkg], env);
  if (code !== 0) throw new Error(`apt-get install ${pkg} failed (exit ${code})`);
}

// ---------------------------------------------------------------------------
// Postgres

/** Same connection URL, different database. */
export function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.toString();
}

/** Database name of a connection URL (defaults like libpq: the user name). */
export function databaseName(url: string): string {
  const u = new URL(url);
  const db = decodeURIComponent(u.pathname.replace(/^\/+/, ''));
  return db || decodeURIComponent(u.username) || 'postgres';
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

const PG_CONNECTION_ERRORS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENOENT',
  'CONNECT_TIMEOUT',
  'CONNECTION_CLOSED',
  'CONNECTION_ENDED',
  'CONNECTION_DESTROYED',
]);

function maintenanceClient(url: string): postgres.Sql {
  return postgres(withDatabase(url, 'postgres'), {
    connect_timeout: 3,
    max: 1,
    idle_timeout: 1,
    onnotice: () => {},
  });
}

type Probe = { ok: true } | { ok: false; connectionError: boolean; message: string };

async function probePostgres(url: string): Promise<Probe> {
  let sql: postgres.Sql;
  try {
    sql = maintenanceClient(url);
  } catch (err) {
    return { ok: false, connectionError: false, message: errorMessage(err) };
  }
  try {
    await sql`select 1`;
    return { ok: true };
  } catch (err) {
    const code = errorCode(err);
    return {
      ok: false,
      connectionError: code !== undefined && PG_CONNECTION_ERRORS.has(code),
      message: `${code ? `${code}: ` : ''}${errorMessage(err)}`,
    };
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** Creates `name` on the server of `url` unless it already exists. */
export async function ensureDatabase(url: string, name: string, log: Log): Promise<void> {
  const sql = maintenanceClient(url);
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length > 0) return;
    log(`creating database "${name}"`);
    try {
      await sql.unsafe(`create database ${quoteIdent(name)}`);
    } catch (err) {
      if (errorCode(err) !== '42P04') throw err; // created concurrently
    }
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

/** Drops (forcibly) and recreates database `name` on the server of `url`; returns its URL. */
export async function recreateDatabase(url: string, name: string, log: Log): Promise<string> {
  const sql = maintenanceClient(url);
  try {
    log(`recreating database "${name}"`);
    await sql.unsafe(`drop database if exists ${quoteIdent(name)} with (force)`);
    await sql.unsafe(`create database ${quoteIdent(name)}`);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
  return withDatabase(url, name);
}

export async function dropDatabase(url: string, name: string, log: Log): Promise<void> {
  const sql = maintenanceClient(url);
  try {
    log(`dropping database "${name}"`);
    await sql.unsafe(`drop database if exists ${quoteIdent(name)} with (force)`);
  } finally {
    await sql.end({ timeout: 1 }).catch(() => {});
  }
}

interface PosixUser {
  name: string;
  uid: number;
  gid: number;
}

function lookupUser(name: string): PosixUser | null {
  let passwd: string;
  try {
    passwd = fs.readFileSync('/etc/passwd', 'utf8');
  } catch {
    return null;
  }
  for (const line of passwd.split('\n')) {
    const [user, , uid, gid] = line.split(':');
    if (user === name && uid !== undefined && gid !== undefined) {
      return { name, uid: Number(uid), gid: Number(gid) };
    }
  }
  return null;
}

/** initdb/pg_ctl refuse to run as root: pick (or create) an unprivileged user. */
async function serviceUser(log: Log): Promise<PosixUser> {
  const existing = lookupUser('postgres') ?? lookupUser('cs2dev');
  if (existing) return existing;
  log('creating system user "cs2dev" to run the project-local Postgres (initdb refuses to run as root)');
  await runChecked(['useradd', '-r', '-M', '-s', '/usr/sbin/nologin', 'cs2dev'], 'useradd');
  const created = lookupUser('cs2dev');
  if (!created) throw new Error('useradd cs2dev succeeded but the user cannot be found in /etc/passwd');
  return created;
}

function findPgTools(): { pgCtl: string; initdb: string } | null {
  const pgCtl = findBinary('pg_ctl');
  if (!pgCtl) return null;
  // Use the initdb from the same installation as pg_ctl so versions match.
  const sibling = path.join(path.dirname(fs.realpathSync(pgCtl)), 'initdb');
  const initdb = isExecutable(sibling) ? sibling : findBinary('initdb');
  return initdb ? { pgCtl, initdb } : null;
}

function initdbLocale(): string {
  return fs.existsSync('/usr/lib/locale/C.utf8') || fs.existsSync('/usr/lib/locale/C.UTF-8') ? 'C.UTF-8' : 'C';
}

function mkdirp(dir: string, mode: number): void {
  fs.mkdirSync(dir, { recursive: true, mode });
  fs.chmodSync(dir, mode);
}

async function startLocalPostgres(dbName: string, log: Log): Promise<{ url: string; stop: () => Promise<void> }> {
  let tools = findPgTools();
  if (!tools) {
    log('Postgres server binaries (initdb/pg_ctl) not found: installing package "postgresql"');
    await aptInstall('postgresql', log);
    tools = findPgTools();
    if (!tools) throw new Error('postgresql was installed but initdb/pg_ctl still cannot be found');
  }
  const { pgCtl, initdb } = tools;
  const pgData = path.join(dataDir, 'postgres');
  const runDir = path.join(dataDir, 'run');
  const logFile = path.join(dataDir, 'postgres.log');

  mkdirp(dataDir, 0o755);
  mkdirp(runDir, 0o755);
  if (!fs.existsSync(pgData)) fs.mkdirSync(pgData, { mode: 0o700 });
  if (!fs.existsSync(logFile)) fs.writeFileSync(logFile, '');

  let asUser = (argv: string[]): string[] => argv;
  if (process.getuid?.() === 0) {
    const user = await serviceUser(log);
    asUser = (argv) => ['runuser', '-u', user.name, '--', ...argv];
    if (fs.statSync(pgData).uid !== user.uid) {
      await runChecked(['chown', '-R', `${user.uid}:${user.gid}`, pgData], 'chown');
    }
    fs.chownSync(runDir, user.uid, user.gid);
    fs.chownSync(logFile, user.uid, user.gid);
    const access = await run(asUser(['test', '-w', pgData, '-a', '-w', runDir]));
    if (access.code !== 0) {
      throw new Error(
        `user "${user.name}" cannot write to ${pgData} / ${runDir}; every parent directory of the repository must be traversable (o+x) by that user`,
      );
    }
  }

  if (!fs.existsSync(path.join(pgData, 'PG_VERSION'))) {
    if (fs.readdirSync(pgData).length > 0) {
      throw new Error(`${pgData} is not empty but holds no initialised cluster; remove it and retry`);
    }
    log(`initialising project-local Postgres cluster in .data/postgres (${initdb})`);
    await runChecked(asUser([initdb, '-D', pgData, '--auth=trust', '-U', 'postgres', '--encoding=UTF8', `--locale=${initdbLocale()}`]), 'initdb');
  }

  let port: number | null = null;
  const status = await run(asUser([pgCtl, 'status', '-D', pgData]));
  if (status.code === 0) {
    // Left over from an earlier run that did not shut down: reuse it (and stop it when done).
    const pidLines = fs.readFileSync(path.join(pgData, 'postmaster.pid'), 'utf8').split('\n');
    const recorded = Number(pidLines[3]);
    if (Number.isInteger(recorded) && recorded > 0) {
      port = recorded;
      log(`reusing project-local Postgres already running on 127.0.0.1:${port}`);
    } else {
      log('stopping project-local Postgres in an unknown state');
      await run(asUser([pgCtl, '-D', pgData, '-m', 'fast', '-w', 'stop']));
    }
  }
  if (port === null) {
    port = await freePort();
    log(`starting project-local Postgres on 127.0.0.1:${port} (data .data/postgres, log .data/postgres.log)`);
    const opts = `-p ${port} -k ${shQuote(runDir)} -c listen_addresses=127.0.0.1`;
    const r = await run(asUser([pgCtl, '-D', pgData, '-o', opts, '-l', logFile, '-w', 'start']));
    if (r.code !== 0) {
      throw new Error(`pg_ctl start failed (exit ${r.code}):\n${r.output}\n--- .data/postgres.log ---\n${tailFile(logFile)}`);
    }
  }

  const stop = once(async () => {
    log('stopping project-local Postgres');
    const r = await run(asUser([pgCtl, '-D', pgData, '-m', 'fast', '-w', 'stop']));
    if (r.code !== 0) log(`pg_ctl stop failed (exit ${r.code}): ${r.output}`);
  });
  const url = `postgres://postgres@127.0.0.1:${port}/${encodeURIComponent(dbName)}`;
  try {
    await ensureDatabase(url, dbName, log);
  } catch (err) {
    await stop();
    throw err;
  }
  return { url, stop };
}

async function resolvePostgres(log: Log): Promise<{ url: string; stop: (() => Promise<void>) | null }> {
  const explicit = process.env.DATABASE_URL;
  const candidate = explicit || DEFAULT_DATABASE_URL;
  const dbName = databaseName(candidate);
  const probe = await probePostgres(candidate);
  if (probe.ok) {
    await ensureDatabase(candidate, dbName, log);
    log(`postgres: using ${redactUrl(candidate)}`);
    return { url: candidate, stop: null };
  }
  if (explicit && !probe.connectionError) {
    throw new Error(`DATABASE_URL ${redactUrl(explicit)} is reachable but unusable: ${probe.message}`);
  }
  log(`postgres: ${redactUrl(candidate)} not usable (${probe.message}); using a project-local server`);
  const local = await startLocalPostgres(dbName, log);
  log(`postgres: using ${local.url}`);
  return local;
}

// ---------------------------------------------------------------------------
// Redis

interface RedisTarget {
  host: string;
  port: number;
}

function redisTarget(url: string): RedisTarget {
  const u = new URL(url);
  return { host: u.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1', port: u.port ? Number(u.port) : 6379 };
}

/**
 * Sends `payload` and resolves with the first reply line (or whatever was
 * received when the server closed the connection).
 */
function redisRoundTrip(target: RedisTarget, payload: string, timeoutMs: number): Promise<string> {
  return new Promise((resolve, reject) => {
    let received = '';
    let settled = false;
    const socket = net.connect({ host: target.host, port: target.port });
    const finish = (err: Error | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      if (err) reject(err);
      else resolve(received.split('\r\n')[0] ?? '');
    };
    const timer = setTimeout(() => finish(new Error(`timeout after ${timeoutMs} ms`)), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('connect', () => socket.write(payload));
    socket.on('data', (chunk: string) => {
      received += chunk;
      if (received.includes('\r\n')) finish(null);
    });
    socket.on('error', (err) => finish(err));
    socket.on('close', () => finish(null));
  });
}

async function probeRedis(url: string): Promise<Probe> {
  let target: RedisTarget;
  try {
    target = redisTarget(url);
  } catch (err) {
    return { ok: false, connectionError: false, message: errorMessage(err) };
  }
  try {
    const reply = await redisRoundTrip(target, 'PING\r\n', 2000);
    if (reply.startsWith('+PONG')) return { ok: true };
    return { ok: false, connectionError: false, message: `unexpected reply to PING: ${JSON.stringify(reply)}` };
  } catch (err) {
    return { ok: false, connectionError: true, message: errorMessage(err) };
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function readPid(file: string): number | null {
  try {
    const pid = Number(fs.readFileSync(file, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

function isRedisProcess(pid: number): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('redis-server');
  } catch {
    return false;
  }
}

async function startLocalRedis(dbPath: string, log: Log): Promise<{ url: string; stop: () => Promise<void> }> {
  let bin = findBinary('redis-server');
  if (!bin) {
    log('redis-server not found: installing package "redis-server"');
    await aptInstall('redis-server', log);
    bin = findBinary('redis-server');
    if (!bin) throw new Error('redis-server was installed but still cannot be found');
  }
  const dir = path.join(dataDir, 'redis');
  const pidFile = path.join(dir, 'redis.pid');
  const portFile = path.join(dir, 'redis.port');
  const logFile = path.join(dir, 'redis.log');
  mkdirp(dataDir, 0o755);
  mkdirp(dir, 0o755);

  let port: number | null = null;
  const oldPid = readPid(pidFile);
  if (oldPid !== null && processAlive(oldPid) && isRedisProcess(oldPid)) {
    const oldPort = Number(fs.existsSync(portFile) ? fs.readFileSync(portFile, 'utf8').trim() : NaN);
    if (Number.isInteger(oldPort) && (await probeRedis(`redis://127.0.0.1:${oldPort}`)).ok) {
      port = oldPort;
      log(`reusing project-local Redis already running on 127.0.0.1:${port}`);
    } else {
      log(`killing stale project-local redis-server (pid ${oldPid})`);
      process.kill(oldPid, 'SIGKILL');
    }
  }
  if (port === null) {
    fs.rmSync(pidFile, { force: true });
    port = await freePort();
    log(`starting project-local Redis on 127.0.0.1:${port} (dir .data/redis)`);
    // prettier-ignore
    const r = await run([
      bin,
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--daemonize',
      'yes',
      '--pidfile',
      pidFile,
      '--logfile',
      logFile,
    ]);
    if (r.code !== 0) {
      throw new Error(`redis-server failed to start (exit ${r.code}):\n${r.output}\n--- .data/redis/redis.log ---\n${tailFile(logFile)}`);
    }
    fs.writeFileSync(portFile, `${port}\n`);
  }

  const url = `redis://127.0.0.1:${port}${dbPath}`;
  const target: RedisTarget = { host: '127.0.0.1', port };

  const stop = once(async () => {
    log('stopping project-local Redis');
    const pid = readPid(pidFile);
    await redisRoundTrip(target, 'SHUTDOWN NOSAVE\r\n', 2000).catch(() => '');
    const deadline = Date.now() + 5000;
    while (Date.now() < deadline) {
      const stillUp = pid !== null ? processAlive(pid) : (await probeRedis(url)).ok;
      if (!stillUp) break;
      await sleep(100);
    }
    if (pid !== null && processAlive(pid) && isRedisProcess(pid)) {
      log(`redis-server (pid ${pid}) did not shut down; killing it`);
      process.kill(pid, 'SIGKILL');
    }
    fs.rmSync(portFile, { force: true });
  });

  const deadline = Date.now() + 10_000;
  for (;;) {
    if ((await probeRedis(url)).ok) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`project-local Redis did not answer PING within 10 s\n--- .data/redis/redis.log ---\n${tailFile(logFile)}`);
    }
    await sleep(100);
  }
  return { url, stop };
}

async function resolveRedis(log: Log): Promise<{ url: string; stop: (() => Promise<void>) | null }> {
  const explicit = process.env.REDIS_URL;
  const candidate = explicit || DEFAULT_REDIS_URL;
  const parsed = new URL(candidate);
  if (parsed.protocol === 'rediss:') {
    log(`redis: using ${redactUrl(candidate)} (TLS, not probed)`);
    return { url: candidate, stop: null };
  }
  const probe = await probeRedis(candidate);
  if (probe.ok) {
    log(`redis: using ${redactUrl(candidate)}`);
    return { url: candidate, stop: null };
  }
  if (explicit && !probe.connectionError) {
    throw new Error(`REDIS_URL ${redactUrl(explicit)} is reachable but unusable (AUTH is not supported here): ${probe.message}`);
  }
  log(`redis: ${redactUrl(candidate)} not usable (${probe.message}); using a project-local server`);
  const dbPath = parsed.pathname.length > 1 ? parsed.pathname : '';
  const local = await startLocalRedis(dbPath, log);
  log(`redis: using ${local.url}`);
  return local;
}

// ---------------------------------------------------------------------------
// Chromium

/**
 * docs/design.md §4: renders and the docs-page test drive Debian's Chromium, installed with apt-get like
 * Postgres when CHROMIUM_PATH (default /usr/bin/chromium) is missing.
 */
export async function ensureChromium(log: Log): Promise<void> {
  const chromiumPath = process.env.CHROMIUM_PATH || '/usr/bin/chromium';
  if (isExecutable(chromiumPath)) return;
  log(`Chromium not found at ${chromiumPath}: installing package "chromium"`);
  await aptInstall('chromium', log);
  if (!isExecutable(chromiumPath)) {
    throw new Error(`chromium was installed but ${chromiumPath} still does not exist; point CHROMIUM_PATH at its binary`);
  }
}

// ---------------------------------------------------------------------------

/**
 * Ensures Postgres and Redis are available. Returns their URLs and a stop()
 * that shuts down only the servers started here.
 */
export async function ensureServices(opts: { log: Log }): Promise<Services> {
  const { log } = opts;
  const stops: Array<() => Promise<void>> = [];
  const stopAll = once(async () => {
    for (const stop of stops.reverse()) {
      try {
        await stop();
      } catch (err) {
        log(`error while stopping a service: ${errorMessage(err)}`);
      }
    }
  });
  try {
    const pg = await resolvePostgres(log);
    if (pg.stop) stops.push(pg.stop);
    const redis = await resolveRedis(log);
    if (redis.stop) stops.push(redis.stop);
    return { databaseUrl: pg.url, redisUrl: redis.url, stop: stopAll };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
