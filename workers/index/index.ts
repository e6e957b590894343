import type { PoolDefinition } from '../pool.ts';

// No jobs yet: the pool starts, heartbeats and stops cleanly; its jobs arrive with later issues.
export const indexPool: PoolDefinition = {
  pool: 'index',
  handlers: () => [],
};
