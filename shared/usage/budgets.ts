import type { Tier } from '../identity/workspaces.ts';

// docs/design.md §5 defaults; enterprise workspaces carry their own budgets (admin CLI), else these.
export const TIER_BUDGETS: Record<Tier, { minute: number; day: number }> = {
  free: { minute: 120, day: 20_000 },
  pro: { minute: 1_200, day: 1_000_000 },
  enterprise: { minute: 6_000, day: 10_000_000 },
};

export type Budgets = { minute: number; day: number };

export function budgetsFor(workspace: { tier: Tier; minuteBudget: number | null; dayBudget: number | null }): Budgets {
  const defaults = TIER_BUDGETS[workspace.tier];
  return { minute: workspace.minuteBudget ?? defaults.minute, day: workspace.dayBudget ?? defaults.day };
}
