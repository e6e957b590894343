import type { SourceName } from '../platform/source-names.ts';
import { bitskins } from './bitskins.ts';
import { csdeals } from './csdeals.ts';
import { csfloat } from './csfloat.ts';
import { csmarket } from './csmarket.ts';
import { lisskins } from './lisskins.ts';
import { skinbaron } from './skinbaron.ts';
import { skinport } from './skinport.ts';
import { steam } from './steam.ts';
import type { SourceAdapter } from './types.ts';
import { waxpeer } from './waxpeer.ts';
import { whitemarket } from './whitemarket.ts';

/**
 * Every adapter by source name (docs/design.md §9, §13 and §14); `SOURCES` chooses which ones run (skinbaron only
 * with its key: shared/sources/settings.ts enabledSources).
 */
export const ADAPTERS: Record<SourceName, SourceAdapter> = { skinport, steam, csfloat, csmarket, lisskins, waxpeer, whitemarket, bitskins, csdeals, skinbaron };

export { createRequestBudget, type RequestBudget } from './budget.ts';
export * from './types.ts';
