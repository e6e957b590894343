import type { Pool } from '../shared/queues.ts';
import { exportsPool } from './exports/index.ts';
import { indexPool } from './index/index.ts';
import { ingestPool } from './ingest/index.ts';
import { maintenancePool } from './maintenance/index.ts';
import type { PoolDefinition } from './pool.ts';
import { renderPool } from './render/index.ts';
import { webhooksPool } from './webhooks/index.ts';

export const POOL_DEFINITIONS: Record<Pool, PoolDefinition> = {
  ingest: ingestPool,
  index: indexPool,
  render: renderPool,
  exports: exportsPool,
  webhooks: webhooksPool,
  maintenance: maintenancePool,
};
