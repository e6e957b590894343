import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import type { Queryable } from '../platform/db.ts';
import { canonicalJson } from '../util/canonical-json.ts';
import { hmacSha256, sha256Hex } from '../util/crypto.ts';

// docs/design.md §6: records are kept 24 h; an in-flight claim whose owner died is taken over after a minute.
export const IDEMPOTENCY_RETENTION_MS = 24 * 60 * 60 * 1000;
export const IDEMPOTENCY_LOCK_MS = 60 * 1000;
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,255}$/;

export function requestFingerprint(request: { method: string; path: string; body: unknown }): string {
  return sha256Hex(`${request.method.toUpperCase()} ${request.path}\n${canonicalJson(request.body ?? null)}`);
}

export type ClaimOutcome = { kind: 'claimed' } | { kind: 'replay'; status: number; body: unknown } | { kind: 'reused' } | { kind: 'in_use' };

type Scope = { workspaceId: string; operation: string; key: string };

/**
 * Stored responses can hold secrets (a new API key's raw value), so they are sealed with AES-256-GCM
 * under a key derived from SIGNING_KEY and the client's raw Idempotency-Key, which is itself stored
 * only as a digest: a database dump alone cannot reopen them, while the client repeating the same
 * request gets its original response back.
 */
function sealingKey(secret: string, scope: Scope): Buffer {
  return hmacSha256(secret, `idempotency-response\n${scope.workspaceId}\n${scope.operation}\n${scope.key}`);
}

function sealResponse(secret: string, scope: Scope, body: unknown): Buffer {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', sealingKey(secret, scope), iv);
  const sealed = Buffer.concat([cipher.update(JSON.stringify(body ?? null), 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), sealed]);
}

function openResponse(secret: string, scope: Scope, sealed: Buffer): unknown {
  const decipher = createDecipheriv('aes-256-gcm', sealingKey(secret, scope), sealed.subarray(0, 12));
  decipher.setAuthTag(sealed.subarray(12, 28));
  return JSON.parse(Buffer.concat([decipher.update(sealed.subarray(28)), decipher.final()]).toString('utf8'));
}

/**
 * Claims (workspace, operation, key) for one request. Exactly one of any number of concurrent
 * identical requests gets `claimed`; the others see `in_use`, or `replay` once it completed.
 */
export async function claimIdempotencyKey(db: Queryable, scope: Scope, fingerprint: string, now: Date, secret: string): Promise<ClaimOutcome> {
  const lockedUntil = new Date(now.getTime() + IDEMPOTENCY_LOCK_MS);
  const expiresAt = new Date(now.getTime() + IDEMPOTENCY_RETENTION_MS);
  // Insert, or take over a row that expired or whose in-flight owner's lock lapsed.
  const claimed = await db`
    insert into idempotency_records (workspace_id, operation, key_digest, fingerprint, state, locked_until, created_at, expires_at)
    values (${scope.workspaceId}, ${scope.operation}, ${sha256Hex(scope.key)}, ${fingerprint}, 'in_flight', ${lockedUntil}, ${now}, ${expiresAt})
    on conflict (workspace_id, operation, key_digest) do update
      set fingerprint = excluded.fingerprint, state = 'in_flight', response_status = null, response_sealed = null,
          locked_until = excluded.locked_until, created_at = excluded.created_at, expires_at = excluded.expires_at
      where idempotency_records.expires_at <= ${now}
         or (idempotency_records.state = 'in_flight' and idempotency_records.locked_until <= ${now}
             and idempotency_records.fingerprint = excluded.fingerprint)
    returning 1`;
  if (claimed.length === 1) return { kind: 'claimed' };
  const [existing] = await db<{ fingerprint: string; state: string; response_status: number | null; response_sealed: Buffer | null }[]>`
    select fingerprint, state, response_status, response_sealed from idempotency_records
    where workspace_id = ${scope.workspaceId} and operation = ${scope.operation} and key_digest = ${sha256Hex(scope.key)}`;
  // Deleted between our insert and select (the owner failed): the caller may simply retry.
  if (!existing) return { kind: 'in_use' };
  if (existing.fingerprint !== fingerprint) return { kind: 'reused' };
  if (existing.state === 'in_flight') return { kind: 'in_use' };
  let body: unknown = null;
  try {
    body = existing.response_sealed ? openResponse(secret, scope, existing.response_sealed) : null;
  } catch {
    // Sealed under a SIGNING_KEY since rotated: the original cannot be replayed, so the key is spent.
    return { kind: 'reused' };
  }
  return { kind: 'replay', status: existing.response_status ?? 200, body };
}

export async function completeIdempotencyKey(db: Queryable, scope: Scope, status: number, body: unknown, secret: string): Promise<void> {
  await db`
    update idempotency_records set state = 'completed', response_status = ${status}, response_sealed = ${sealResponse(secret, scope, body)}
    where workspace_id = ${scope.workspaceId} and operation = ${scope.operation} and key_digest = ${sha256Hex(scope.key)}`;
}

/** Drops an in-flight claim whose request failed, so the same key can be retried. */
export async function releaseIdempotencyKey(db: Queryable, scope: Scope): Promise<void> {
  await db`
    delete from idempotency_records
    where workspace_id = ${scope.workspaceId} and operation = ${scope.operation} and key_digest = ${sha256Hex(scope.key)}
      and state = 'in_flight'`;
}

export async function deleteExpiredIdempotencyRecords(db: Queryable, now: Date): Promise<number> {
  const rows = await db`delete from idempotency_records where expires_at <= ${now} returning 1`;
  return rows.length;
}
