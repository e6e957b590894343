import type { Queryable } from '../platform/db.ts';
import { randomToken, sha256Hex } from '../util/crypto.ts';
import { newId } from '../util/ids.ts';

export type SessionPrincipal = {
  sessionId: string;
  accountId: string;
  workspaceId: string;
  email: string;
  expiresAt: Date;
};

/** Creates a session; the raw token is returned here only, the database keeps its SHA-256. */
export async function insertSession(db: Queryable, accountId: string, ttlSeconds: number, now: Date): Promise<{ id: string; token: string; expiresAt: Date }> {
  const token = `sess_${randomToken(32)}`;
  const id = newId();
  const expiresAt = new Date(now.getTime() + ttlSeconds * 1000);
  await db`
    insert into sessions (id, account_id, token_hash, created_at, expires_at)
    values (${id}, ${accountId}, ${sha256Hex(token)}, ${now}, ${expiresAt})`;
  return { id, token, expiresAt };
}

export async function findActiveSession(db: Queryable, token: string, now: Date): Promise<SessionPrincipal | null> {
  const [row] = await db<{ id: string; account_id: string; workspace_id: string; email: string; expires_at: Date }[]>`
    select s.id, s.account_id, a.workspace_id, a.email, s.expires_at
    from sessions s join accounts a on a.id = s.account_id
    where s.token_hash = ${sha256Hex(token)} and s.revoked_at is null and s.expires_at > ${now}`;
  if (!row) return null;
  return { sessionId: row.id, accountId: row.account_id, workspaceId: row.workspace_id, email: row.email, expiresAt: row.expires_at };
}

export async function revokeSession(db: Queryable, sessionId: string, now: Date): Promise<void> {
  await db`update sessions set revoked_at = ${now} where id = ${sessionId} and revoked_at is null`;
}

export async function deleteExpiredSessions(db: Queryable, now: Date): Promise<number> {
  const rows = await db`delete from sessions where expires_at < ${now} returning id`;
  return rows.length;
}
