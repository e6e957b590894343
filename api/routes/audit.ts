import { Elysia } from 'elysia';
import { z } from 'zod';
import { AUDIT_NAME_PATTERN, AUDIT_OUTCOMES, AUDIT_SOURCES, type AuditEventPosition, auditEventSchema, listAuditEvents } from '../../shared/audit/events.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { errors } from '../../shared/http/errors.ts';
import { cursorInstant, dateTime, pageCursor, pageLimit, uuid } from '../../shared/http/validation.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';

const auditQuery = z
  .object({
    source: z.enum(AUDIT_SOURCES).optional(),
    event_type: z.string().regex(AUDIT_NAME_PATTERN).optional(),
    resource_type: z.string().regex(AUDIT_NAME_PATTERN).optional(),
    outcome: z.enum(AUDIT_OUTCOMES).optional(),
    from: dateTime.optional(),
    to: dateTime.optional(),
    limit: pageLimit({ max: 200, default: 50 }),
    cursor: pageCursor,
  })
  .strict();

const auditPage = z.object({
  data: z.array(auditEventSchema),
  next_cursor: z.string().nullable().describe('Pass as `cursor` for the next page; null on the last page'),
});

const position: z.ZodType<AuditEventPosition> = z.object({ id: uuid('event id'), occurred_at: cursorInstant });

export function auditRoutes(deps: Pick<AppDeps, 'config' | 'sql'> & ApiKeyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;
  return new Elysia({ name: 'audit-routes' }).use(apiKeyPlugin(deps)).get(
    '/v2/audit/events',
    async ({ principal, query }) => {
      const { from, to } = query;
      if (from && to && from >= to) throw errors.invalidRequest('`from` must be before `to`.', [{ field: 'query.from', message: 'must be before to' }]);
      // docs/interface.md §4: the cursor binds every filter (and the workspace), not the page size.
      const filters = {
        workspace: principal.workspace.id,
        source: query.source ?? null,
        event_type: query.event_type ?? null,
        resource_type: query.resource_type ?? null,
        outcome: query.outcome ?? null,
        from: from?.toISOString() ?? null,
        to: to?.toISOString() ?? null,
      };
      const after = query.cursor ? decodeCursor(signingKey, 'audit_events', filters, query.cursor, position) : null;
      const page = await listAuditEvents(
        deps.sql,
        principal.workspace.id,
        { source: query.source, event_type: query.event_type, resource_type: query.resource_type, outcome: query.outcome, from, to },
        after,
        query.limit,
      );
      return { data: page.events, next_cursor: page.next ? encodeCursor(signingKey, 'audit_events', filters, page.next) : null };
    },
    {
      operation: 'audit_events.list',
      query: auditQuery,
      detail: {
        summary: 'Audit events of the workspace, newest first',
        description: [
          'The workspace\'s audit events, newest first: every platform mutation (keys, scenes, renders, webhooks, exports, trade intents, connected accounts) and every refused request on a known workspace (401/403, 409 conflicts) with `outcome: rejected`. Filters: `source`, `event_type`, `resource_type`, `outcome`, `from` (inclusive) and `to` (exclusive). Metadata keys that name secrets (secret, token, password, api_key, authorization, signature, private_key, at any depth) have their values shown as `"[REDACTED]"`.',
          '`limit` 1 to 200 (default 50).',
          'Errors: 400 `invalid_request` (`from` not before `to`, a malformed filter), 400 `invalid_cursor`.',
        ].join('\n\n'),
        tags: ['audit'],
        responses: routeResponses({ 200: { description: 'One page of events', body: auditPage } }),
      },
    },
  );
}
