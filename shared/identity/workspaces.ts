import type { Queryable } from '../platform/db.ts';
import { newId } from '../util/ids.ts';

export const TIERS = ['free', 'pro', 'enterprise'] as const;
export type Tier = (typeof TIERS)[number];

export type Workspace = {
  id: string;
  name: string;
  tier: Tier;
  minute_budget: number | null;
  day_budget: number | null;
  suspended_at: Date | null;
};

export async function insertWorkspace(db: Queryable, input: { name: string; tier?: Tier }): Promise<Workspace> {
  const [row] = await db<Workspace[]>`
    insert into workspaces (id, name, tier) values (${newId()}, ${input.name}, ${input.tier ?? 'free'})
    returning id, name, tier, minute_budget, day_budget, suspended_at`;
  return row!;
}

export async function findWorkspace(db: Queryable, id: string): Promise<Workspace | null> {
  const [row] = await db<Workspace[]>`
    select id, name, tier, minute_budget, day_budget, suspended_at from workspaces where id = ${id}`;
  return row ?? null;
}

export async function updateWorkspaceTier(db: Queryable, id: string, tier: Tier): Promise<boolean> {
  const rows = await db`update workspaces set tier = ${tier} where id = ${id} returning id`;
  return rows.length === 1;
}

export async function updateWorkspaceBudgets(db: Queryable, id: string, budgets: { minute: number | null; day: number | null }): Promise<boolean> {
  const rows = await db`
    update workspaces set minute_budget = ${budgets.minute}, day_budget = ${budgets.day} where id = ${id} returning id`;
  return rows.length === 1;
}

export async function updateWorkspaceSuspension(db: Queryable, id: string, suspended: boolean): Promise<boolean> {
  const rows = await db`
    update workspaces set suspended_at = ${suspended ? new Date() : null} where id = ${id} returning id`;
  return rows.length === 1;
}
