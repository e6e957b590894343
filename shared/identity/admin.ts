import { insertAuditEvent } from '../audit/events.ts';
import { DEFAULT_SCOPES, normaliseScopes, type Scope } from '../http/scopes.ts';
import type { Sql } from '../platform/db.ts';
import { insertAccount } from './accounts.ts';
import { findKeyHashesOfWorkspace, insertApiKey } from './api-keys.ts';
import { hashPassword } from './passwords.ts';
import { insertWorkspace, type Tier, updateWorkspaceBudgets, updateWorkspaceSuspension, updateWorkspaceTier } from './workspaces.ts';

/** Operator actions behind `npm run admin`; each records an audit event with actor `admin`. */
const adminActor = { type: 'admin' as const, id: process.env.USER ?? 'cli' };

export async function adminCreateWorkspace(sql: Sql, input: { name: string; tier: Tier }) {
  return sql.begin(async (tx) => {
    const workspace = await insertWorkspace(tx, input);
    await insertAuditEvent(tx, {
      workspaceId: workspace.id,
      eventType: 'workspace.created',
      resourceType: 'workspace',
      resourceId: workspace.id,
      outcome: 'succeeded',
      actor: adminActor,
      metadata: { name: workspace.name, tier: workspace.tier },
    });
    return workspace;
  });
}

export async function adminCreateAccount(sql: Sql, input: { workspaceId: string; email: string; password: string }) {
  const passwordHash = await hashPassword(input.password);
  return sql.begin(async (tx) => {
    const account = await insertAccount(tx, { workspaceId: input.workspaceId, email: input.email, passwordHash });
    if (!account) throw new Error(`an account with email ${input.email} already exists`);
    await insertAuditEvent(tx, {
      workspaceId: input.workspaceId,
      eventType: 'account.created',
      resourceType: 'account',
      resourceId: account.id,
      outcome: 'succeeded',
      actor: adminActor,
      metadata: { email: account.email },
    });
    return { id: account.id, email: account.email, workspace_id: account.workspace_id };
  });
}

export async function adminCreateKey(sql: Sql, input: { workspaceId: string; label: string; scopes?: Scope[] }) {
  const scopes = normaliseScopes(input.scopes ?? DEFAULT_SCOPES);
  return sql.begin(async (tx) => {
    const key = await insertApiKey(tx, { workspaceId: input.workspaceId, accountId: null, label: input.label, scopes, now: new Date() });
    await insertAuditEvent(tx, {
      workspaceId: input.workspaceId,
      eventType: 'api_key.created',
      resourceType: 'api_key',
      resourceId: key.id,
      outcome: 'succeeded',
      actor: adminActor,
      metadata: { label: key.label, prefix: key.prefix, scopes },
    });
    return key;
  });
}

export async function adminRevokeKey(sql: Sql, keyId: string): Promise<string | null> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ workspace_id: string; key_hash: string }[]>`
      update api_keys set revoked_at = now() where id = ${keyId} and revoked_at is null returning workspace_id, key_hash`;
    if (!row) return null;
    await insertAuditEvent(tx, {
      workspaceId: row.workspace_id,
      eventType: 'api_key.revoked',
      resourceType: 'api_key',
      resourceId: keyId,
      outcome: 'succeeded',
      actor: adminActor,
    });
    return row.key_hash;
  });
}

/** Applies a workspace change and returns its keys' hashes, so API caches can be told. */
export async function adminUpdateWorkspace(
  sql: Sql,
  workspaceId: string,
  change: { tier: Tier } | { budgets: { minute: number | null; day: number | null } } | { suspended: boolean },
): Promise<string[] | null> {
  return sql.begin(async (tx) => {
    const found =
      'tier' in change
        ? await updateWorkspaceTier(tx, workspaceId, change.tier)
        : 'budgets' in change
          ? await updateWorkspaceBudgets(tx, workspaceId, change.budgets)
          : await updateWorkspaceSuspension(tx, workspaceId, change.suspended);
    if (!found) return null;
    await insertAuditEvent(tx, {
      workspaceId,
      eventType: 'workspace.updated',
      resourceType: 'workspace',
      resourceId: workspaceId,
      outcome: 'succeeded',
      actor: adminActor,
      metadata: change,
    });
    return findKeyHashesOfWorkspace(tx, workspaceId);
  });
}
