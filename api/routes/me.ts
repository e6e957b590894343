import { Elysia } from 'elysia';
import { z } from 'zod';
import { errors } from '../../shared/http/errors.ts';
import { unitWeights } from '../../shared/http/operations.ts';
import { SCOPES } from '../../shared/http/scopes.ts';
import type { ApiKeyPrincipal } from '../../shared/identity/api-keys.ts';
import { TIERS } from '../../shared/identity/workspaces.ts';
import type { CounterRow, WindowState } from '../../shared/usage/metering.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';

const principalRecord = z.object({
  workspace: z.object({ id: z.uuid(), name: z.string(), tier: z.enum(['free', 'pro', 'enterprise']) }),
  key: z.object({ id: z.uuid(), label: z.string(), prefix: z.string(), scopes: z.array(z.enum(SCOPES)) }),
});

const usageWindow = z.object({
  limit: z.number().int().describe('Units the window allows'),
  used: z.number().int(),
  remaining: z.number().int(),
  resets_at: z.string(),
});
const usageRecord = z.object({
  workspace: z.object({ id: z.uuid(), tier: z.enum(TIERS) }),
  budgets: z.object({ minute: usageWindow, day: usageWindow }).describe('Workspace budgets after this request’s own unit was debited'),
  key: z.object({
    id: z.uuid(),
    day: z.string().describe('The UTC day the counters cover (YYYY-MM-DD)'),
    operations: z.array(z.object({ operation: z.string(), requests: z.number().int(), units: z.number().int(), errors: z.number().int() })),
  }),
  unit_weights: z.record(z.string(), z.number().int()).describe('Units each operation costs, by operation id'),
});

const windowJson = (window: WindowState) => ({
  limit: window.limit,
  used: window.used,
  remaining: window.remaining,
  resets_at: window.resetsAt.toISOString(),
});

// The body depends on the principal only, and the key cache hands out the same principal object
// until it reloads the key: serialised once per cached principal.
const principalBodies = new WeakMap<ApiKeyPrincipal, string>();

function principalJson(principal: ApiKeyPrincipal): string {
  let body = principalBodies.get(principal);
  if (body === undefined) {
    body = JSON.stringify({
      workspace: { id: principal.workspace.id, name: principal.workspace.name, tier: principal.workspace.tier },
      key: { id: principal.keyId, label: principal.label, prefix: principal.prefix, scopes: principal.scopes },
    } satisfies z.infer<typeof principalRecord>);
    principalBodies.set(principal, body);
  }
  return body;
}

export function meRoutes(deps: Pick<AppDeps, 'meter' | 'now'> & ApiKeyPluginDeps) {
  return new Elysia({ name: 'me-routes' })
    .use(apiKeyPlugin(deps))
    .get(
      '/v2/me',
      ({ principal, set }) => {
        set.headers['content-type'] = 'application/json;charset=utf-8';
        return principalJson(principal);
      },
      {
        operation: 'me.get',
        // Documented rather than validated per response: a zod parse of every body cost ~2.5 µs of the hot path.
        detail: {
          summary: 'The calling key, its workspace and tier',
          description: 'The calling key (id, label, prefix, scopes) and its workspace (id, name, tier): a cheap way to check a key.',
          tags: ['identity'],
          responses: routeResponses({ 200: { description: 'The calling key and its workspace', body: principalRecord } }),
        },
      },
    )
    .get(
      '/v2/usage',
      async ({ principal, usage }) => {
        let counters: { day: string; counters: CounterRow[] };
        try {
          counters = await deps.meter.keyCounters({ workspaceId: principal.workspace.id, keyId: principal.keyId, now: deps.now() });
        } catch {
          throw errors.unavailable('usage_unavailable', 'Usage counters are unavailable; retry shortly.');
        }
        return {
          workspace: { id: principal.workspace.id, tier: principal.workspace.tier },
          // The state after this request's own unit was debited.
          budgets: { minute: windowJson(usage.minute), day: windowJson(usage.day) },
          key: { id: principal.keyId, day: counters.day, operations: counters.counters },
          unit_weights: unitWeights(),
        };
      },
      {
        operation: 'usage.get',
        detail: {
          summary: 'Budgets, unit weights and the calling key’s counters',
          description: [
            "The workspace's per-minute and per-UTC-day budgets after this request's own unit (`limit`, `used`, `remaining`, `resets_at`), the calling key's counters for the current UTC day per operation (`requests`, `units`, `errors`), and `unit_weights`: the units every keyed operation costs, by operation id (the operation ids of this document).",
            'Errors: 503 `usage_unavailable` (the counters cannot be read).',
          ].join('\n\n'),
          tags: ['identity'],
          responses: routeResponses({ 200: { description: 'Budgets and counters', body: usageRecord } }),
        },
      },
    );
}
