import type { Pool } from '../shared/jobs/queues.ts';
import type { PoolDefinition } from './pool.ts';

/**
 * Each pool's definition, loaded on demand: a process imports only the pools it runs, so a
 * Procfile process of one pool does not carry the others' modules (a `webhooks` process held ~24 MB
 * more RSS with every pool loaded: the render pool's viewer and item data, the catalog, …).
 */
export const POOL_LOADERS: Record<Pool, () => Promise<PoolDefinition>> = {
  ingest: async () => (await import('./ingest/index.ts')).ingestPool,
  index: async () => (await import('./index/index.ts')).indexPool,
  render: async () => (await import('./render/index.ts')).renderPool,
  exports: async () => (await import('./exports/index.ts')).exportsPool,
  webhooks: async () => (await import('./webhooks/index.ts')).webhooksPool,
  maintenance: async () => (await import('./maintenance/index.ts')).maintenancePool,
};

export function loadPools(names: readonly Pool[]): Promise<PoolDefinition[]> {
  return Promise.all(names.map((name) => POOL_LOADERS[name]()));
}
