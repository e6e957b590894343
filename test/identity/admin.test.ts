import { afterAll, expect, test } from 'bun:test';
import { join } from 'node:path';
import { createTestApp, eventually } from '../helpers.ts';

// The admin CLI as an operator runs it: a separate process against the same database and Redis.
const t = createTestApp();
afterAll(() => t.close());

async function admin(...args: string[]): Promise<{ code: number; json: Record<string, unknown> | null; stderr: string }> {
  const child = Bun.spawn(['bun', join(import.meta.dir, '..', '..', 'scripts', 'admin.ts'), ...args], {
    env: { ...process.env, LOG_LEVEL: 'silent' },
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [stdout, stderr, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  return { code, json: code === 0 ? (JSON.parse(stdout) as Record<string, unknown>) : null, stderr };
}

test('creates a workspace, account and key, changes tier and budgets, suspends and revokes', async () => {
  await t.deps.ready();
  const workspace = await admin('create-workspace', '--name', 'Ops test', '--tier', 'pro');
  expect(workspace.code).toBe(0);
  expect(workspace.json).toMatchObject({ name: 'Ops test', tier: 'pro' });
  const id = workspace.json!.id as string;

  const account = await admin('create-account', '--workspace', id, '--email', `ops-${Date.now()}@example.test`, '--password', 'a long password');
  expect(account.code).toBe(0);

  const key = await admin('create-key', '--workspace', id, '--label', 'ops', '--scopes', 'usage:read,audit:read');
  expect(key.code).toBe(0);
  const headers = { 'x-api-key': key.json!.key as string };
  const me = await t.request('/v2/me', { headers });
  expect(((await me.json()) as { workspace: { tier: string } }).workspace.tier).toBe('pro');

  expect((await admin('set-budgets', '--workspace', id, '--minute', '7', '--day', 'default')).code).toBe(0);
  // The CLI announces the change; the running app drops its cached key and sees the new budget.
  await eventually(async () => {
    const response = await t.request('/v2/me', { headers });
    return response.headers.get('ratelimit-policy')?.includes('"minute";q=7;') ? true : undefined;
  });

  expect((await admin('set-tier', '--workspace', id, '--tier', 'free')).code).toBe(0);
  expect((await admin('suspend', '--workspace', id)).code).toBe(0);
  await eventually(async () => ((await t.request('/v2/me', { headers })).status === 403 ? true : undefined));
  expect((await admin('unsuspend', '--workspace', id)).code).toBe(0);
  await eventually(async () => ((await t.request('/v2/me', { headers })).status === 200 ? true : undefined));

  expect((await admin('revoke-key', '--key', key.json!.id as string)).code).toBe(0);
  await eventually(async () => ((await t.request('/v2/me', { headers })).status === 401 ? true : undefined));

  const all = await t.deps.sql`select event_type, actor_type from audit_events where workspace_id = ${id} order by occurred_at`;
  // The suspended and revoked key's refused calls are recorded too (as the key, not the admin).
  expect(all.filter((event) => event.event_type === 'request.denied').length).toBe(2);
  const events = all.filter((event) => event.event_type !== 'request.denied');
  expect(events.map((event) => event.event_type)).toEqual([
    'workspace.created',
    'account.created',
    'api_key.created',
    'workspace.updated',
    'workspace.updated',
    'workspace.updated',
    'workspace.updated',
    'api_key.revoked',
  ]);
  expect(new Set(events.map((event) => event.actor_type))).toEqual(new Set(['admin']));
});

test('refuses bad arguments with exit code 2 and help', async () => {
  const bad = await admin('set-tier', '--workspace', '00000000-0000-0000-0000-000000000000', '--tier', 'platinum');
  expect(bad.code).toBe(2);
  expect(bad.stderr).toContain('--tier must be one of');
  const unknown = await admin('explode');
  expect(unknown.code).toBe(2);
  const missing = await admin('revoke-key', '--key', '00000000-0000-0000-0000-000000000000');
  expect(missing.code).toBe(2);
  expect(missing.stderr).toContain('no live key');
});
