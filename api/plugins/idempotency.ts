import { Elysia, ElysiaCustomStatusResponse, status } from 'elysia';
import { insertAuditEvent } from '../../shared/audit/events.ts';
import { ApiError, errors } from '../../shared/http/errors.ts';
import type { OperationId } from '../../shared/http/operations.ts';
import {
  claimIdempotencyKey,
  completeIdempotencyKey,
  IDEMPOTENCY_KEY_PATTERN,
  releaseIdempotencyKey,
  requestFingerprint,
} from '../../shared/idempotency/records.ts';
import type { ApiKeyPrincipal } from '../../shared/identity/api-keys.ts';
import type { SessionPrincipal } from '../../shared/identity/sessions.ts';
import type { AppDeps } from '../deps.ts';
import { errorResponses } from '../openapi.ts';
import { requestIdOf } from './errors.ts';
import { answeredEarly } from './request-context.ts';

function pathWithQuery(url: string): string {
  const parsed = new URL(url);
  return parsed.pathname + parsed.search;
}

export type IdempotencyOptions = {
  operation: OperationId;
  required: boolean;
  /**
   * Headers a replay carries that derive from the stored body (a scene's ETag, docs/design.md §10): a replay
   * answers from `resolve`, so the route's own after-handle hooks never see it.
   */
  replayHeaders?: (body: unknown) => Record<string, string>;
};
type Claim = { workspaceId: string; operation: string; key: string; settled: boolean };

/**
 * `idempotent: {operation, required}` on a create route (docs/design.md §6). Must follow the route's
 * authentication (`operation` or `session`), whose principal scopes the key to a workspace.
 * Same key + same request → the stored response with 200 and `Idempotent-Replayed: true`;
 * different request → 409 idempotency_key_reused; first still running → 409 idempotency_key_in_use.
 */
export type IdempotencyPluginDeps = Pick<AppDeps, 'sql' | 'config' | 'log' | 'now'>;

export function idempotencyPlugin(deps: IdempotencyPluginDeps) {
  return new Elysia({ name: 'idempotency' }).macro({
    idempotent: (options: IdempotencyOptions) => ({
      // 400 idempotency_key_required (or a malformed key), 409 reused or still in use (docs/design.md §6).
      detail: {
        responses: errorResponses(400, 409),
        parameters: [
          {
            in: 'header',
            name: 'Idempotency-Key',
            required: options.required,
            description: `${options.required ? 'Required' : 'Optional'}: 1 to 255 visible ASCII characters, unique per intended request. A retry with the same key and the same request within 24 hours gets the first answer's body again, with 200 and \`Idempotent-Replayed: true\`; the same key with a different request is a 409 \`idempotency_key_reused\`, and while the first is still running a 409 \`idempotency_key_in_use\`.`,
            schema: { type: 'string', minLength: 1, maxLength: 255, pattern: IDEMPOTENCY_KEY_PATTERN.source },
          },
        ],
      },
      async resolve(context) {
        const { request, set, body } = context;
        const principal = (context as { principal?: ApiKeyPrincipal }).principal;
        const session = (context as { session?: SessionPrincipal }).session;
        const workspaceId = principal?.workspace.id ?? session?.workspaceId;
        if (!workspaceId) throw new Error('idempotent routes need authentication first');
        const key = request.headers.get('idempotency-key');
        if (key === null) {
          if (options.required) throw new ApiError(400, 'idempotency_key_required', 'This operation requires an Idempotency-Key header.');
          return { idempotency: null as Claim | null };
        }
        if (!IDEMPOTENCY_KEY_PATTERN.test(key)) {
          throw errors.invalidRequest('Idempotency-Key must be 1 to 255 visible ASCII characters.', [
            { field: 'header.idempotency-key', message: 'invalid format' },
          ]);
        }
        const claim: Claim = { workspaceId, operation: options.operation, key, settled: false };
        const fingerprint = requestFingerprint({ method: request.method, path: pathWithQuery(request.url), body });
        const outcome = await claimIdempotencyKey(deps.sql, claim, fingerprint, deps.now(), deps.config.SIGNING_KEY!);
        if (outcome.kind === 'claimed') return { idempotency: claim as Claim | null };
        if (outcome.kind === 'replay') {
          set.headers['idempotent-replayed'] = 'true';
          if (options.replayHeaders) Object.assign(set.headers, options.replayHeaders(outcome.body));
          answeredEarly(context, 200);
          return status(200, outcome.body as never);
        }
        await insertAuditEvent(deps.sql, {
          workspaceId,
          eventType: 'request.denied',
          resourceType: 'operation',
          resourceId: options.operation,
          outcome: 'rejected',
          actor: principal ? { type: 'api_key', id: principal.keyId } : { type: 'account', id: session?.accountId ?? null },
          requestId: requestIdOf(set),
          metadata: { status: 409, reason: outcome.kind === 'reused' ? 'idempotency_key_reused' : 'idempotency_key_in_use' },
        });
        if (outcome.kind === 'reused') {
          throw errors.conflict('idempotency_key_reused', 'This Idempotency-Key was used with a different request; use a new key for a new request.');
        }
        throw errors.conflict('idempotency_key_in_use', 'A request with this Idempotency-Key is still being processed; retry shortly.');
      },
      async afterHandle(context) {
        const claim = (context as { idempotency?: Claim | null }).idempotency;
        const response = (context as { response?: unknown }).response;
        // A handler answering with `status(code, body)` sets neither set.status nor a bare body.
        const custom = response instanceof ElysiaCustomStatusResponse ? response : null;
        const code = custom ? Number(custom.code) : typeof context.set.status === 'number' ? context.set.status : 200;
        if (!claim || code >= 300) return;
        await completeIdempotencyKey(deps.sql, claim, code, (custom ? custom.response : response) ?? null, deps.config.SIGNING_KEY!);
        claim.settled = true;
      },
      async afterResponse(context) {
        const claim = (context as { idempotency?: Claim | null }).idempotency;
        if (!claim || claim.settled) return;
        await releaseIdempotencyKey(deps.sql, claim).catch((error: Error) => deps.log.error({ err: error.message }, 'could not release an idempotency claim'));
      },
    }),
  });
}
