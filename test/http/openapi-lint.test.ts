import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTestApp, type TestApp } from '../helpers.ts';

/**
 * docs/design.md §16: the served /openapi.json passes `@redocly/cli lint` (recommended rules, redocly.yaml)
 * and Spectral's `spectral:oas` (.spectral.yaml) with no error. Warnings are printed, not failed on.
 */

const root = join(import.meta.dir, '..', '..');
const bin = (name: string) => join(root, 'node_modules', '.bin', name);

let t: TestApp;
let dir: string;
let file: string;

beforeAll(async () => {
  t = createTestApp();
  // Over real HTTP, as a client fetches it: the servers entry is this loopback origin.
  const server = t.app.listen({ port: 0, hostname: '127.0.0.1' }).server!;
  const response = await fetch(`http://127.0.0.1:${server.port}/openapi.json`);
  expect(response.status).toBe(200);
  dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  file = join(dir, 'openapi.json');
  writeFileSync(file, await response.text());
});

afterAll(async () => {
  await t.app.stop();
  await t.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs a linter CLI to its end; no network (no telemetry, no update check). */
async function run(argv: string[]): Promise<{ exitCode: number; output: string }> {
  const child = Bun.spawn(argv, {
    cwd: root,
    stdout: 'pipe',
    stderr: 'pipe',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true', NO_COLOR: '1', FORCE_COLOR: '0' },
  });
  const [stdout, stderr, exitCode] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { exitCode, output: `${stdout}\n${stderr}` };
}

describe('/openapi.json lint', () => {
  test('@redocly/cli lint with the recommended rules: no error', async () => {
    const { exitCode, output } = await run([bin('redocly'), 'lint', '--config', join(root, 'redocly.yaml'), '--format', 'json', file]);
    const start = output.indexOf('{');
    const report = JSON.parse(output.slice(start, output.lastIndexOf('}') + 1)) as {
      problems: { ruleId: string; severity: 'error' | 'warn'; message: string; location: { pointer: string }[] }[];
    };
    const problems = report.problems.map((problem) => `${problem.severity} ${problem.ruleId} ${problem.location[0]?.pointer ?? ''}: ${problem.message}`);
    const errors = problems.filter((problem) => problem.startsWith('error'));
    expect(errors).toEqual([]);
    expect(exitCode).toBe(0);
    // The warnings left (see redocly.yaml for the rules turned off, and why).
    if (problems.length > 0) process.stderr.write(`redocly warnings:\n${problems.join('\n')}\n`);
  }, 60_000);

  test("Spectral's spectral:oas: no error", async () => {
    const { exitCode, output } = await run([bin('spectral'), 'lint', '--ruleset', join(root, '.spectral.yaml'), '--format', 'json', '--quiet', file]);
    const start = output.indexOf('[');
    const results = JSON.parse(output.slice(start, output.lastIndexOf(']') + 1)) as { code: string; severity: number; message: string; path: string[] }[];
    // Spectral's severities: 0 error, 1 warning, 2 information, 3 hint.
    const problems = results.map((result) => `${result.severity === 0 ? 'error' : 'warning'} ${result.code} ${result.path.join('.')}: ${result.message}`);
    expect(problems.filter((problem) => problem.startsWith('error'))).toEqual([]);
    expect(exitCode).toBe(0);
    if (problems.length > 0) process.stderr.write(`spectral warnings:\n${problems.join('\n')}\n`);
  }, 60_000);
});
