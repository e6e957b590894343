import type { PoolDefinition } from '../pool.ts';

// No jobs yet: the pool starts, heartbeats and stops cleanly; its jobs arrive with later issues.
export const exportsPool: PoolDefinition = {
  pool: 'exports',
  handlers: () => [],
};
