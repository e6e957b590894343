import { afterAll, expect, test } from 'bun:test';
import { createTestApp, errorOf, workspaceWithKey } from '../helpers.ts';

const t = createTestApp();
afterAll(() => t.close());

test('a key reads its workspace on /v2/me', async () => {
  const ws = await workspaceWithKey(t);
  const response = await t.request('/v2/me', { headers: ws.keyHeaders });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { workspace: { id: string } };
  expect(body.workspace.id).toBe(ws.workspace.id);
  expect(response.headers.get('ratelimit-policy')).toContain('"minute";q=120');
  const denied = await t.request('/v2/me');
  expect(denied.status).toBe(401);
  expect((await errorOf(denied)).code).toBe('unauthorized');
});
