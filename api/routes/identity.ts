import { Elysia } from 'elysia';
import { z } from 'zod';
import { errors } from '../../shared/http/errors.ts';
import { SCOPES } from '../../shared/http/scopes.ts';
import { text } from '../../shared/http/validation.ts';
import { KEY_INVALIDATION_CHANNEL } from '../../shared/identity/key-cache.ts';
import { PASSWORD_MAX_LENGTH, PASSWORD_MIN_LENGTH } from '../../shared/identity/passwords.ts';
import { createAccount, createKey, listKeys, revokeKey, signIn, signOut } from '../../shared/identity/service.ts';
import { TIERS } from '../../shared/identity/workspaces.ts';
import { isUuid } from '../../shared/util/ids.ts';
import type { AppDeps } from '../deps.ts';
import { routeResponses } from '../openapi.ts';
import { clientIp } from '../plugins/client-ip.ts';
import { requestIdOf } from '../plugins/errors.ts';
import { type IdempotencyPluginDeps, idempotencyPlugin } from '../plugins/idempotency.ts';
import { requestMetaPlugin } from '../plugins/request-meta.ts';
import { type SessionPluginDeps, sessionPlugin } from '../plugins/session.ts';

const email = text({ max: 254, trim: true }).pipe(z.email());
const password = text({ max: PASSWORD_MAX_LENGTH }).pipe(z.string().min(PASSWORD_MIN_LENGTH, `must be at least ${PASSWORD_MIN_LENGTH} characters`));

const keyMetadata = z.object({
  id: z.uuid(),
  label: z.string(),
  prefix: z.string(),
  scopes: z.array(z.enum(SCOPES)),
  created_at: z.string(),
  revoked_at: z.string().nullable(),
});

const newSession = z.object({
  token: z.string().describe('Send as `Authorization: Bearer <token>` (or the `session` cookie)'),
  expires_at: z.string(),
});
const createdAccount = z.object({
  account: z.object({ id: z.uuid(), email: z.string() }),
  workspace: z.object({ id: z.uuid(), name: z.string(), tier: z.enum(TIERS) }),
  session: newSession,
});
const createdKey = keyMetadata.omit({ revoked_at: true }).extend({
  key: z.string().describe('The raw API key, for the X-API-Key header; shown in this response only'),
});

const createKeyBody = z
  .object({
    label: text({ min: 1, max: 80, trim: true }).optional(),
    scopes: z
      .array(z.enum(SCOPES, { error: (issue) => `unknown scope ${JSON.stringify(issue.input)}; see GET /v2/meta/scopes` }))
      .min(1, 'name at least one scope, or omit scopes for the read-only defaults')
      .max(SCOPES.length * 2)
      .optional(),
  })
  .strict()
  .nullable()
  .optional();

export function identityRoutes(deps: Pick<AppDeps, 'config' | 'sql' | 'redis' | 'log' | 'now' | 'keys'> & SessionPluginDeps & IdempotencyPluginDeps) {
  const ttl = deps.config.SESSION_TTL_SECONDS;
  return new Elysia({ name: 'identity-routes' })
    .use(sessionPlugin(deps))
    .use(idempotencyPlugin(deps))
    .use(requestMetaPlugin(deps))
    .post(
      '/v1/accounts',
      async ({ body, set, requestMeta }) => {
        const created = await createAccount(
          deps.sql,
          { email: body.email, password: body.password, workspaceName: body.workspace_name, sessionTtlSeconds: ttl },
          requestMeta,
        );
        set.status = 201;
        return created;
      },
      {
        body: z.object({ email, password, workspace_name: text({ min: 1, max: 120, trim: true }).optional() }),
        detail: {
          summary: 'Create an account and its workspace; returns a session',
          description: [
            'Step 1 of getting an API key (see the introduction). Creates an account, its workspace (free tier; named after `workspace_name` when given) and a first session, and answers 201 with the session token.',
            'The email is trimmed and must be a valid address of at most 254 characters; the password has 10 to 256 characters and is stored as an argon2id hash; `workspace_name` has 1 to 120.',
            'Errors: 400 `invalid_request` (details name the field), 409 `email_taken`.',
          ].join('\n\n'),
          tags: ['identity'],
          responses: routeResponses({ 201: { description: 'Account, workspace and session created', body: createdAccount } }, 409),
        },
      },
    )
    .post(
      '/v1/sessions',
      async ({ body, set, request, server, requestMeta }) => {
        const created = await signIn(
          deps.sql,
          { email: body.email, password: body.password, clientIp: clientIp(deps, request, server), sessionTtlSeconds: ttl },
          requestMeta,
        );
        set.status = 201;
        return created;
      },
      {
        body: z.object({ email: text({ max: 254 }), password: text({ max: PASSWORD_MAX_LENGTH }) }),
        detail: {
          summary: 'Sign in',
          description: [
            'Checks the email and password and answers 201 with a new session token, valid for `SESSION_TTL_SECONDS` (default 12 hours).',
            'Failed sign-ins are counted over 15 minutes: after 5 for one email, or 20 from one client address, further attempts get 429 `too_many_sign_in_attempts` with `Retry-After`, whatever the password.',
            'Errors: 401 `invalid_credentials`, 429 `too_many_sign_in_attempts`.',
          ].join('\n\n'),
          tags: ['identity'],
          responses: routeResponses({ 201: { description: 'Session created', body: z.object({ session: newSession }) } }, 401, 429, 503),
        },
      },
    )
    .delete(
      '/v1/sessions/current',
      async ({ session, set, requestMeta }) => {
        await signOut(deps.sql, session, requestMeta);
        set.status = 204;
      },
      {
        session: true,
        detail: {
          summary: 'Sign out the current session',
          description: 'Ends the session that sent the request: its token stops working at once. Answers 204.',
          tags: ['identity'],
          responses: routeResponses({ 204: 'Signed out' }),
        },
      },
    )
    .get('/v1/me/keys', async ({ session }) => ({ keys: await listKeys(deps.sql, session) }), {
      session: true,
      response: { 200: z.object({ keys: z.array(keyMetadata) }) },
      detail: {
        summary: "List the workspace's API keys (never their secrets)",
        description:
          "Every API key of the session's workspace, live and revoked (`revoked_at`), with its label, prefix and scopes; never the key itself (only its SHA-256 hash is stored).",
        tags: ['identity'],
      },
    })
    .post(
      '/v1/me/keys',
      async ({ session, body, set, requestMeta }) => {
        const created = await createKey(deps.sql, session, { label: body?.label, scopes: body?.scopes }, requestMeta);
        set.status = 201;
        return created;
      },
      {
        session: true,
        idempotent: { operation: 'keys.create', required: false },
        body: createKeyBody,
        detail: {
          summary: 'Create an API key; the raw key is returned once',
          description: [
            "Step 2 of getting an API key. Creates a key for the session's workspace and answers 201 with `key`, the raw secret, in this response only: send it as `X-API-Key`.",
            '`label` has 1 to 80 characters. `scopes` names at least one scope of GET /v2/meta/scopes; without it the key gets the read-only defaults. An `Idempotency-Key` is optional here: with one, a retried request is answered with the first answer instead of creating a second key.',
            'Errors: 400 `invalid_request` (an unknown scope, an empty list, an unknown field).',
          ].join('\n\n'),
          tags: ['identity'],
          responses: routeResponses({ 201: { description: 'Key created; `key` appears in this response only', body: createdKey } }),
        },
      },
    )
    .delete(
      '/v1/me/keys/:id',
      async ({ session, params, set, requestMeta }) => {
        if (!isUuid(params.id)) throw errors.notFound('No live API key with this id in your workspace.');
        const { keyHash } = await revokeKey(deps.sql, session, params.id, requestMeta);
        deps.keys.invalidate(keyHash);
        await deps.redis.publish(KEY_INVALIDATION_CHANNEL, keyHash).catch((error: Error) => {
          // Other API processes fall back to their cache TTL (seconds).
          deps.log.warn({ err: error.message, request_id: requestIdOf(set) }, 'could not announce key revocation');
        });
        set.status = 204;
      },
      {
        session: true,
        params: z.object({ id: text({ max: 64 }) }),
        detail: {
          summary: 'Revoke an API key',
          description: [
            "Revokes a key of the session's workspace and answers 204. Requests with it get 401 `unauthorized` from then on: other API processes are told at once, and at worst drop it from their caches within seconds.",
            'Errors: 404 `not_found` (no live key with this id in your workspace).',
          ].join('\n\n'),
          tags: ['identity'],
          responses: routeResponses({ 204: 'Revoked' }, 404),
        },
      },
    );
}
