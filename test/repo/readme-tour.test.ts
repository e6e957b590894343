import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { databaseName, freePort, withDatabase } from '../../scripts/services.ts';
import { eventually } from '../helpers.ts';
import { removeQueueKeys } from '../webhooks/webhooks-fixtures.ts';

/**
 * Issue 22: the README's five-minute tour runs top to bottom. The stack is started the way `npm start`
 * starts it (`bun scripts/dev.ts start`: migrations, catalog sync, the local fakes, the API and one
 * worker process with every pool, the development webhook key), on a free port with a private
 * database, queue prefix, blob directory and key file. Only what makes the first prices quick differs
 * from the defaults: two sources (skinport and steam) against the simulator, and a keyless snapshot
 * every 5 s instead of every minute. Then the tour's shell block runs under `bash -euo pipefail`.
 */
const root = join(import.meta.dir, '..', '..');

/** The ```sh blocks of the README between `<!-- tour -->` and `<!-- /tour -->`, as one script. */
export function tourScript(readme: string): string {
  const section = /<!-- tour -->([\s\S]*?)<!-- \/tour -->/.exec(readme)?.[1];
  if (!section) throw new Error('README.md has no <!-- tour --> … <!-- /tour --> section');
  const blocks = [...section.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!);
  if (blocks.length === 0) throw new Error('the tour section has no ```sh block');
  return blocks.join('\n');
}

const dir = mkdtempSync(join(tmpdir(), 'readme-tour-'));
const keyFile = join(dir, 'webhook-secret-key');
const queuePrefix = `tour${process.pid}`;
const database = `${databaseName(process.env.DATABASE_URL!)}_tour_${process.pid}`;
const output: string[] = [];
let stack: ReturnType<typeof Bun.spawn> | undefined;
let base = '';

/** Every line of a child's stdout and stderr, into `lines`. */
function collect(stream: ReadableStream<Uint8Array>, lines: string[]): Promise<void> {
  return (async () => {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of stream) {
      buffer += decoder.decode(chunk, { stream: true });
      const parts = buffer.split('\n');
      buffer = parts.pop()!;
      lines.push(...parts);
    }
    if (buffer) lines.push(buffer);
  })();
}

/** The environment of a newcomer's shell: none of the variables npm start would otherwise fill in. */
function newcomerEnv(): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (/^(WEBHOOK_|SOURCE|STEAM_|SIMULATOR_|FX_URL$|PORT$|PUBLIC_BASE_URL$|PRICE_SNAPSHOT_|INGEST_)/.test(name)) continue;
    env[name] = value;
  }
  return env;
}

beforeAll(async () => {
  const port = await freePort();
  const simulatorPort = await freePort();
  const simulator = `http://127.0.0.1:${simulatorPort}`;
  base = `http://127.0.0.1:${port}`;
  stack = Bun.spawn([process.execPath, 'scripts/dev.ts', 'start'], {
    cwd: root,
    env: {
      ...newcomerEnv(),
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      DATABASE_URL: withDatabase(process.env.DATABASE_URL!, database),
      QUEUE_PREFIX: queuePrefix,
      PORT: String(port),
      WORKER_METRICS_PORT: '0',
      BLOB_DIR: join(dir, 'blobs'),
      WEBHOOK_SECRET_KEY_FILE: keyFile,
      SIMULATOR_PORT: String(simulatorPort),
      SOURCES: 'skinport,steam',
      SOURCE_SKINPORT_URL: `${simulator}/skinport`,
      SOURCE_STEAM_URL: `${simulator}/steam`,
      PRICE_SNAPSHOT_INTERVAL_SECONDS: '5',
    },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  void collect(stack.stdout as ReadableStream<Uint8Array>, output);
  void collect(stack.stderr as ReadableStream<Uint8Array>, output);
  await eventually(
    async () => {
      if (stack!.exitCode !== null) throw new Error(`npm start exited (${stack!.exitCode}):\n${output.slice(-30).join('\n')}`);
      try {
        return (await fetch(`${base}/v2/health`, { signal: AbortSignal.timeout(1_000) })).ok ? true : undefined;
      } catch {
        return undefined;
      }
    },
    150_000,
    250,
  );
}, 160_000);

afterAll(async () => {
  if (stack && stack.exitCode === null) {
    stack.kill('SIGTERM'); // dev.ts stops every process it started
    await Promise.race([stack.exited, Bun.sleep(30_000).then(() => stack!.kill('SIGKILL'))]);
  }
  const admin = postgres(withDatabase(process.env.DATABASE_URL!, 'postgres'), { max: 1, onnotice: () => undefined });
  await admin.unsafe(`drop database if exists "${database}" with (force)`);
  await admin.end({ timeout: 5 });
  await removeQueueKeys(process.env.REDIS_URL!, queuePrefix);
  rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('the README', () => {
  test('npm start made a development webhook key (0600, never printed) and allowed local targets', () => {
    const key = readFileSync(keyFile, 'utf8').trim();
    expect(Buffer.from(key, 'base64').length).toBe(32);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(output.some((line) => line.includes('created a development key'))).toBe(true);
    expect(output.some((line) => line.includes('WEBHOOK_ALLOW_PRIVATE_TARGETS not set'))).toBe(true);
    expect(output.some((line) => line.includes(key))).toBe(false);
  });

  test('its five-minute tour runs top to bottom against the started stack, and the receiver verifies the test event', async () => {
    const script = tourScript(readFileSync(join(root, 'README.md'), 'utf8'));
    expect(script).not.toContain('localhost:3000/');
    const receiverPort = await freePort();
    const tour = Bun.spawn(['bash', '-euo', 'pipefail', '-c', script], {
      cwd: root,
      env: { ...newcomerEnv(), BASE: base, RECEIVER_PORT: String(receiverPort) },
      stdout: 'pipe',
      stderr: 'pipe',
    });
    const lines: string[] = [];
    const read = Promise.all([collect(tour.stdout as ReadableStream<Uint8Array>, lines), collect(tour.stderr as ReadableStream<Uint8Array>, lines)]);
    const code = await tour.exited;
    await read;
    const transcript = lines.join('\n');
    if (code !== 0) throw new Error(`the tour exited ${code}:\n${transcript}\n--- npm start, last lines:\n${output.slice(-30).join('\n')}`);
    // The test event the API announced is the one the receiver verified.
    const announced = /\{"event_id":"([^"]+)"\}/.exec(transcript)?.[1];
    expect(announced).toBeDefined();
    expect(transcript).toContain(`verified webhook.test ${announced}`);
    // The inventory of the Steam fake's public SteamID, and the budget the tour left.
    expect(transcript).toContain('AK-47 | Redline (Field-Tested)');
    expect(transcript).toMatch(/limit: 120,/);
  }, 240_000);
});
