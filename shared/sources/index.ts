import { csfloat } from './csfloat.ts';
import { skinport } from './skinport.ts';
import { steam } from './steam.ts';
import type { SourceAdapter, SourceName } from './types.ts';

/** Every adapter by source name (DESIGN 9); `SOURCES` chooses which ones run. */
export const ADAPTERS: Record<SourceName, SourceAdapter> = { skinport, steam, csfloat };

export { createRequestBudget, type RequestBudget } from './budget.ts';
export * from './types.ts';
