import type { Queryable } from '../platform/db.ts';
import { newId } from '../util/ids.ts';

export type Account = { id: string; workspace_id: string; email: string; password_hash: string };

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Returns null when the email is taken (unique index on lower(email)). */
export async function insertAccount(db: Queryable, input: { workspaceId: string; email: string; passwordHash: string }): Promise<Account | null> {
  const [row] = await db<Account[]>`
    insert into accounts (id, workspace_id, email, password_hash)
    values (${newId()}, ${input.workspaceId}, ${normaliseEmail(input.email)}, ${input.passwordHash})
    on conflict (lower(email)) do nothing
    returning id, workspace_id, email, password_hash`;
  return row ?? null;
}

export async function findAccountByEmail(db: Queryable, email: string): Promise<Account | null> {
  const [row] = await db<Account[]>`
    select id, workspace_id, email, password_hash from accounts where lower(email) = ${normaliseEmail(email)}`;
  return row ?? null;
}
