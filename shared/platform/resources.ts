import type { Config } from './config.ts';
import type { Sql } from './db.ts';
import type { Logger } from './logger.ts';
import type { Redis } from './redis.ts';

/**
 * What job code gets from its process, declared once: the worker runtime builds it, each pool's
 * handlers receive it (workers/pool.ts), and services that run in workers take it or the part they
 * use (`Pick<WorkerResources, 'sql' | 'now'>`) rather than repeating the shape.
 */
export type WorkerResources = {
  config: Config;
  sql: Sql;
  /** For plain commands (budgets, caches); fails fast when Redis is down. */
  redis: Redis;
  log: Logger;
  now: () => Date;
};
