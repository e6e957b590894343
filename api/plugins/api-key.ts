import { Elysia } from 'elysia';
import { insertAuditEvent } from '../../shared/audit/events.ts';
import { errors } from '../../shared/http/errors.ts';
import { operation as findOperation, type OperationId } from '../../shared/http/operations.ts';
import { grantsScope } from '../../shared/http/scopes.ts';
import { type ApiKeyPrincipal, hashKey } from '../../shared/identity/api-keys.ts';
import { budgetsFor } from '../../shared/usage/budgets.ts';
import { type DebitResult, rateLimitHeaders } from '../../shared/usage/metering.ts';
import type { AppDeps } from '../deps.ts';
import { errorResponses } from '../openapi.ts';
import { type FailedRequest, requestIdOf } from './errors.ts';

const KEY_MAX_LENGTH = 200;

/**
 * `operation: '<id>'` on a route: API-key authentication (401), workspace and scope checks (403,
 * recorded as rejected audit events), then one metering debit (429/503) with RateLimit headers.
 */
export type ApiKeyPluginDeps = Pick<AppDeps, 'sql' | 'log' | 'keys' | 'meter' | 'now'>;

/**
 * The key checks of `operation:` as a plain function, for a route that accepts either a key or a
 * session (POST /v2/gameplatform/accounts/connect) and so cannot use the macro, which requires a key.
 */
export function apiKeyAuthenticator(deps: ApiKeyPluginDeps) {
  async function recordDenial(
    principal: ApiKeyPrincipal,
    operationId: string,
    status: number,
    reason: string,
    requestId: string,
    extra: Record<string, unknown> = {},
  ) {
    try {
      await insertAuditEvent(deps.sql, {
        workspaceId: principal.workspace.id,
        eventType: 'request.denied',
        resourceType: 'operation',
        resourceId: operationId,
        outcome: 'rejected',
        actor: { type: 'api_key', id: principal.keyId },
        requestId,
        metadata: { status, reason, ...extra },
      });
    } catch (error) {
      deps.log.error({ err: error, request_id: requestId }, 'could not record denied request');
    }
  }

  async function authenticate(operationId: OperationId, request: Request, set: { headers: Record<string, string | number | string[] | undefined> }) {
    const op = findOperation(operationId);
    const requestId = requestIdOf(set);
    const rawKey = request.headers.get('x-api-key');
    if (!rawKey) throw errors.unauthorized();
    if (rawKey.length > KEY_MAX_LENGTH) throw errors.unauthorized('The API key is invalid.');
    let principal: ApiKeyPrincipal | null;
    try {
      principal = await deps.keys.lookup(hashKey(rawKey));
    } catch (error) {
      deps.log.error({ err: error, request_id: requestId }, 'key lookup failed');
      throw errors.unavailable('database_unavailable', 'The service cannot verify API keys right now; retry shortly.');
    }
    if (!principal) throw errors.unauthorized('The API key is invalid.');
    if (principal.revoked) {
      await recordDenial(principal, op.id, 401, 'key_revoked', requestId);
      throw errors.unauthorized('The API key has been revoked.');
    }
    if (principal.workspace.suspended) {
      await recordDenial(principal, op.id, 403, 'workspace_suspended', requestId);
      throw errors.forbidden('workspace_suspended', 'The workspace of this API key is suspended.');
    }
    const missing = op.scopes.find((scope) => !grantsScope(principal.scopes, scope));
    if (missing) {
      await recordDenial(principal, op.id, 403, 'insufficient_scope', requestId, { required_scope: missing });
      throw errors.missingScope(missing);
    }
    let usage: DebitResult;
    try {
      usage = await deps.meter.debit({
        workspaceId: principal.workspace.id,
        keyId: principal.keyId,
        operation: op.id,
        units: op.units,
        budgets: budgetsFor(principal.workspace),
        now: deps.now(),
      });
    } catch (error) {
      deps.log.warn({ err: (error as Error).message, request_id: requestId }, 'usage metering unavailable');
      throw errors.unavailable('usage_unavailable', 'Usage metering is unavailable, so metered requests are refused; retry shortly.');
    }
    Object.assign(set.headers, rateLimitHeaders(usage));
    if (!usage.allowed) {
      const window = usage.exhausted === 'day' ? usage.day : usage.minute;
      throw errors.tooManyRequests(
        'usage_limit_exceeded',
        `The workspace has used its ${usage.exhausted === 'day' ? 'UTC-day' : 'per-minute'} budget of ${window.limit} units.`,
        window.resetSeconds,
      );
    }
    return { principal, usage, operationId: op.id };
  }

  /**
   * An error answer of a keyed request, after its key was accepted, counted against the key (GET
   * /v2/usage). Refusals by the key check itself are counted by the debit script (429) or belong to
   * no key (401/403/503): those requests have no principal. Every error answer of a keyed route is
   * thrown, so the errors plugin's error hook sees each one (countFailure).
   */
  function countError(principal: ApiKeyPrincipal | undefined, operationId: OperationId) {
    if (!principal) return;
    deps.meter
      .countError({ workspaceId: principal.workspace.id, keyId: principal.keyId, operation: operationId, now: deps.now() })
      .catch((error: Error) => deps.log.warn({ err: error.message }, 'could not count an error'));
  }

  /** For the errors plugin: a failed request whose key was accepted counts as an error of its key. */
  function countFailure(request: FailedRequest) {
    if (request.operationId !== undefined) countError(request.principal as ApiKeyPrincipal | undefined, request.operationId as OperationId);
  }

  return { authenticate, countFailure };
}

export function apiKeyPlugin(deps: ApiKeyPluginDeps) {
  const { authenticate } = apiKeyAuthenticator(deps);
  return new Elysia({ name: 'api-key-auth' }).macro({
    operation: (operationId: OperationId) => ({
      detail: { security: [{ apiKey: [] }], responses: errorResponses(401, 403, 429, 503) },
      resolve: ({ request, set }) => authenticate(operationId, request, set),
      // An error hook runs only when a request fails, where an after-response hook would be scheduled
      // for every request (~1 µs each on GET /v2/me). Every error answer of a keyed route is thrown.
      // Only members of the context, never the context itself: Elysia reads which members a hook
      // uses from its source, and a hook that takes the whole context makes every request of the
      // route parse its cookies and query for it.
    }),
  });
}
