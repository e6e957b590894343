import { insertAuditEvent } from '../audit/events.ts';
import { ApiError, errors } from '../http/errors.ts';
import { DEFAULT_SCOPES, normaliseScopes, type Scope } from '../http/scopes.ts';
import type { Sql } from '../platform/db.ts';
import { findAccountByEmail, insertAccount } from './accounts.ts';
import { type ApiKeyMetadata, insertApiKey, listApiKeys, revokeApiKey } from './api-keys.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { insertSession, revokeSession, type SessionPrincipal } from './sessions.ts';
import { clearSignInFailures, recordSignInFailure, signInRetryAfter } from './sign-in-limits.ts';
import { insertWorkspace } from './workspaces.ts';

type RequestMeta = { requestId: string; now: Date };

export async function createAccount(
  sql: Sql,
  input: { email: string; password: string; workspaceName?: string; sessionTtlSeconds: number },
  meta: RequestMeta,
) {
  const passwordHash = await hashPassword(input.password);
  return sql.begin(async (tx) => {
    const workspace = await insertWorkspace(tx, { name: input.workspaceName ?? `${input.email.split('@')[0]}'s workspace`.slice(0, 120) });
    const account = await insertAccount(tx, { workspaceId: workspace.id, email: input.email, passwordHash });
    if (!account) throw errors.conflict('email_taken', 'An account with this email already exists.');
    const session = await insertSession(tx, account.id, input.sessionTtlSeconds, meta.now);
    const actor = { type: 'account' as const, id: account.id };
    await insertAuditEvent(tx, {
      workspaceId: workspace.id,
      eventType: 'account.created',
      resourceType: 'account',
      resourceId: account.id,
      outcome: 'succeeded',
      actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { email: account.email },
    });
    await insertAuditEvent(tx, {
      workspaceId: workspace.id,
      eventType: 'session.created',
      resourceType: 'session',
      resourceId: session.id,
      outcome: 'succeeded',
      actor,
      requestId: meta.requestId,
      occurredAt: meta.now,
    });
    return {
      account: { id: account.id, email: account.email },
      workspace: { id: workspace.id, name: workspace.name, tier: workspace.tier },
      session: { token: session.token, expires_at: session.expiresAt.toISOString() },
    };
  });
}

/** Signs in, refusing while the email or client IP is over its failed-attempt limit (429). */
export async function signIn(sql: Sql, input: { email: string; password: string; clientIp: string | null; sessionTtlSeconds: number }, meta: RequestMeta) {
  const retryAfter = await signInRetryAfter(sql, input.email, input.clientIp, meta.now);
  if (retryAfter > 0) {
    throw errors.tooManyRequests('too_many_sign_in_attempts', 'Too many failed sign-ins for this email or address; try again later.', retryAfter);
  }
  const account = await findAccountByEmail(sql, input.email);
  const valid = await verifyPassword(input.password, account?.password_hash ?? null);
  if (!account || !valid) {
    await sql.begin(async (tx) => {
      await recordSignInFailure(tx, input.email, input.clientIp, meta.now);
      if (account) {
        await insertAuditEvent(tx, {
          workspaceId: account.workspace_id,
          eventType: 'session.created',
          resourceType: 'session',
          outcome: 'rejected',
          actor: { type: 'account', id: account.id },
          requestId: meta.requestId,
          occurredAt: meta.now,
          metadata: { reason: 'invalid_credentials', client_ip: input.clientIp },
        });
      }
    });
    throw new ApiError(401, 'invalid_credentials', 'The email or password is wrong.');
  }
  return sql.begin(async (tx) => {
    await clearSignInFailures(tx, input.email);
    const session = await insertSession(tx, account.id, input.sessionTtlSeconds, meta.now);
    await insertAuditEvent(tx, {
      workspaceId: account.workspace_id,
      eventType: 'session.created',
      resourceType: 'session',
      resourceId: session.id,
      outcome: 'succeeded',
      actor: { type: 'account', id: account.id },
      requestId: meta.requestId,
      occurredAt: meta.now,
    });
    return { session: { token: session.token, expires_at: session.expiresAt.toISOString() } };
  });
}

export async function signOut(sql: Sql, session: SessionPrincipal, meta: RequestMeta): Promise<void> {
  await sql.begin(async (tx) => {
    await revokeSession(tx, session.sessionId, meta.now);
    await insertAuditEvent(tx, {
      workspaceId: session.workspaceId,
      eventType: 'session.revoked',
      resourceType: 'session',
      resourceId: session.sessionId,
      outcome: 'succeeded',
      actor: { type: 'account', id: session.accountId },
      requestId: meta.requestId,
      occurredAt: meta.now,
    });
  });
}

export type PublicKey = { id: string; label: string; prefix: string; scopes: Scope[]; created_at: string; revoked_at: string | null };

function publicKey(key: ApiKeyMetadata): PublicKey {
  return {
    id: key.id,
    label: key.label,
    prefix: key.prefix,
    scopes: key.scopes,
    created_at: key.created_at.toISOString(),
    revoked_at: key.revoked_at ? key.revoked_at.toISOString() : null,
  };
}

export async function createKey(sql: Sql, session: SessionPrincipal, input: { label?: string; scopes?: Scope[] }, meta: RequestMeta) {
  const scopes = normaliseScopes(input.scopes ?? DEFAULT_SCOPES);
  return sql.begin(async (tx) => {
    const key = await insertApiKey(tx, {
      workspaceId: session.workspaceId,
      accountId: session.accountId,
      label: input.label ?? 'default',
      scopes,
      now: meta.now,
    });
    await insertAuditEvent(tx, {
      workspaceId: session.workspaceId,
      eventType: 'api_key.created',
      resourceType: 'api_key',
      resourceId: key.id,
      outcome: 'succeeded',
      actor: { type: 'account', id: session.accountId },
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { label: key.label, prefix: key.prefix, scopes },
    });
    // The raw key appears in this response only (docs/design.md §5).
    const { revoked_at: _revoked, ...created } = publicKey(key);
    return { ...created, key: key.key };
  });
}

export async function listKeys(sql: Sql, session: SessionPrincipal): Promise<PublicKey[]> {
  return (await listApiKeys(sql, session.workspaceId)).map(publicKey);
}

/** Revokes a live key of the session's workspace; the hash lets callers clear key caches. */
export async function revokeKey(sql: Sql, session: SessionPrincipal, keyId: string, meta: RequestMeta): Promise<{ key: PublicKey; keyHash: string }> {
  return sql.begin(async (tx) => {
    const key = await revokeApiKey(tx, session.workspaceId, keyId, meta.now);
    if (!key) throw errors.notFound('No live API key with this id in your workspace.');
    await insertAuditEvent(tx, {
      workspaceId: session.workspaceId,
      eventType: 'api_key.revoked',
      resourceType: 'api_key',
      resourceId: key.id,
      outcome: 'succeeded',
      actor: { type: 'account', id: session.accountId },
      requestId: meta.requestId,
      occurredAt: meta.now,
      metadata: { label: key.label, prefix: key.prefix },
    });
    return { key: publicKey(key), keyHash: key.key_hash };
  });
}
