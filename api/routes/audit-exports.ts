import { Elysia } from 'elysia';
import { z } from 'zod';
import { checkDownloadSignature, signDownloadUrl } from '../../shared/audit/exports-download.ts';
import {
  AUDIT_EXPORT_STATES,
  type AuditExportPosition,
  type AuditExportRow,
  checkExportRange,
  isDownloadable,
  toAuditExportJob,
} from '../../shared/audit/exports-model.ts';
import { findAuditExport, findAuditExportById, listAuditExports } from '../../shared/audit/exports-repository.ts';
import { createAuditExport, enqueueAuditExport } from '../../shared/audit/exports-service.ts';
import { decodeCursor, encodeCursor } from '../../shared/http/cursor.ts';
import { errors } from '../../shared/http/errors.ts';
import { cursorInstant, dateTime, pageCursor, pageLimit, text, uuid } from '../../shared/http/validation.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { type ApiKeyPluginDeps, apiKeyPlugin } from '../plugins/api-key.ts';
import { requestIdOf } from '../plugins/errors.ts';
import { type IdempotencyPluginDeps, idempotencyPlugin } from '../plugins/idempotency.ts';
import { signedDownload, signedUrlQuery } from '../signed-download.ts';

const createBody = z
  .object({
    from: dateTime.describe('Start of the range, inclusive (RFC 3339)'),
    to: dateTime.describe('End of the range, exclusive (RFC 3339); not in the future, at most 32 days after from'),
  })
  .strict();
const listQuery = z
  .object({
    state: z.enum(AUDIT_EXPORT_STATES).optional(),
    limit: pageLimit({ max: 100, default: 25 }),
    cursor: pageCursor,
  })
  .strict();
const exportParams = z.object({ export_id: uuid('The export id (uuid)') });
// The download URL is its own credential: its id is not checked for shape before the signature is.
const downloadParams = z.object({ export_id: text({ max: 64 }).describe('The export id (uuid)') });

const isoOrNull = z.string().nullable();
const countOrNull = z.number().int().nullable();
const jobSchema = z.object({
  export_id: z.uuid(),
  state: z.enum(AUDIT_EXPORT_STATES),
  from: z.string(),
  to: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
  attempts: z.number().int(),
  leased_until: isoOrNull,
  completed_at: isoOrNull,
  failed_at: isoOrNull,
  event_count: countOrNull,
  bytes: countOrNull,
  sha256: z.string().nullable(),
  expires_at: isoOrNull,
  download_url: z.string().nullable(),
  download_url_expires_at: isoOrNull,
  failure_reason: z.string().nullable(),
});

const position: z.ZodType<AuditExportPosition> = z.object({ id: uuid('export id'), created_at: cursorInstant });

export function auditExportRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'log' | 'now' | 'queues'> & ApiKeyPluginDeps & IdempotencyPluginDeps) {
  const signingKey = deps.config.SIGNING_KEY!;

  /**
   * The job as a client sees it; a completed, unexpired one gets a newly signed URL on every read.
   * URLs are under PUBLIC_BASE_URL, or the request's own origin when it is unset (development).
   */
  const jobJson = (row: AuditExportRow, request: Request) => {
    const now = deps.now();
    const base = deps.config.PUBLIC_BASE_URL ?? new URL(request.url).origin;
    return toAuditExportJob(row, isDownloadable(row, now) ? signDownloadUrl(base, signingKey, row.id, now) : null);
  };

  const download = signedDownload({
    blobDir: deps.config.BLOB_DIR,
    url: 'download',
    resource: 'export',
    gone: 'The export file is no longer available.',
    check: (id, query) => checkDownloadSignature(signingKey, id, query.expires, query.signature, deps.now()),
    find: (id) => findAuditExportById(deps.sql, id),
    // The stored .ndjson.gz as is, without Content-Encoding: clients save exactly the bytes that
    // `bytes` and `sha256` describe, instead of having them silently decompressed on the way.
    file: (row) =>
      isDownloadable(row, deps.now())
        ? {
            blobKey: row.blob_key!,
            sha256: row.sha256,
            contentType: 'application/gzip',
            contentDisposition: `attachment; filename="audit-export-${row.id}.ndjson.gz"`,
            cacheControl: 'private, no-store',
          }
        : null,
  });

  return new Elysia({ name: 'audit-export-routes' })
    .use(apiKeyPlugin(deps))
    .use(idempotencyPlugin(deps))
    .post(
      '/v2/audit/exports',
      async ({ principal, body, set }) => {
        const { from, to } = body;
        const now = deps.now();
        checkExportRange(from, to, now);
        const row = await createAuditExport(deps.sql, {
          workspaceId: principal.workspace.id,
          from,
          to,
          actor: { type: 'api_key', id: principal.keyId },
          requestId: requestIdOf(set),
          now,
        });
        // After commit. If Redis fails us here the job is still recorded, and the sweeper enqueues it.
        await enqueueAuditExport(deps.queues.exports, row).catch((error: Error) =>
          deps.log.warn({ err: error.message, export_id: row.id, request_id: requestIdOf(set) }, 'could not enqueue an audit export; the sweeper will'),
        );
        set.status = 201;
        // The receipt carries no URL: a new job is never completed.
        return toAuditExportJob(row, null);
      },
      {
        operation: 'audit_exports.create',
        idempotent: { operation: 'audit_exports.create', required: true },
        body: createBody,
        response: { 200: jobSchema, 201: jobSchema },
        detail: {
          summary: 'Export the audit events of a time range',
          description: [
            "Records an export of the workspace's audit events with `from` ≤ occurred_at < `to` and answers 201 with the job (`state: queued`). A worker writes the events, redacted as in GET /v2/audit/events, as gzip-compressed NDJSON and marks the job `completed` with `event_count`, `bytes`, `sha256` and `expires_at` (files are kept `EXPORT_RETENTION_HOURS`, default 24), or `failed` with `failure_reason` after `EXPORT_MAX_ATTEMPTS` (default 3). Read GET /v2/audit/exports/{export_id} for the download URL.",
            'Requires an `Idempotency-Key`.',
            'Errors: 400 `invalid_request` (`from` not before `to`, `to` in the future, more than 32 days apart), 400 `idempotency_key_required`, 409 `idempotency_key_reused` or `idempotency_key_in_use`.',
          ].join('\n\n'),
          tags: ['audit'],
        },
      },
    )
    .get(
      '/v2/audit/exports',
      async ({ principal, query, request }) => {
        // docs/interface.md §4: the cursor binds the state filter (and the workspace), not the page size.
        const filters = { workspace: principal.workspace.id, state: query.state ?? null };
        const after = query.cursor ? decodeCursor(signingKey, 'audit_exports', filters, query.cursor, position) : null;
        const page = await listAuditExports(deps.sql, principal.workspace.id, { state: query.state }, after, query.limit);
        return {
          data: page.rows.map((row) => jobJson(row, request)),
          next_cursor: page.next ? encodeCursor(signingKey, 'audit_exports', filters, page.next) : null,
        };
      },
      {
        operation: 'audit_exports.list',
        query: listQuery,
        response: { 200: z.object({ data: z.array(jobSchema), next_cursor: z.string().nullable() }) },
        detail: {
          summary: 'Audit export jobs, newest first',
          description: [
            'Export jobs of the workspace, newest first, optionally only those in `state`; a completed, unexpired job carries a newly signed `download_url`.',
            '`limit` 1 to 100 (default 25).',
            'Errors: 400 `invalid_cursor`.',
          ].join('\n\n'),
          tags: ['audit'],
        },
      },
    )
    .get(
      '/v2/audit/exports/:export_id',
      async ({ principal, params, request }) => {
        const row = await findAuditExport(deps.sql, principal.workspace.id, params.export_id);
        // docs/interface.md §7: another workspace's export is as absent as a missing one.
        if (!row) throw errors.notFound('No audit export with this id in your workspace.');
        return jobJson(row, request);
      },
      {
        operation: 'audit_exports.get',
        params: exportParams,
        response: { 200: jobSchema },
        detail: {
          summary: 'One audit export job',
          description: [
            'One export job. Every read of a completed, unexpired job signs a new `download_url`, valid for 5 minutes (`download_url_expires_at`), that works without an API key.',
            'Errors: 404 `not_found` (no such export in your workspace).',
          ].join('\n\n'),
          tags: ['audit'],
          responses: routeResponses({}, 404),
        },
      },
    )
    .get('/v2/audit/exports/:export_id/download', async ({ params, query }) => download(params.export_id, query), {
      params: downloadParams,
      query: signedUrlQuery,
      detail: {
        summary: 'Download a finished audit export',
        description: [
          'The export file as stored: gzip-compressed NDJSON, one audit event per line, sent as `application/gzip` without `Content-Encoding`, so the bytes saved are the ones `bytes` and `sha256` describe (the `ETag` is the SHA-256). The signed URL from GET /v2/audit/exports/{export_id} (`expires`, `signature`) is the only credential.',
          'Errors: 403 `invalid_download_url`, 403 `download_url_expired` (read the export again for a new URL), 404 `not_found` (the file is past its retention).',
        ].join('\n\n'),
        tags: ['audit'],
        responses: routeResponses(
          { 200: 'The export file as stored (application/gzip, NDJSON inside; no Content-Encoding): the bytes `bytes` and `sha256` describe' },
          403,
          404,
        ),
      },
    });
}
