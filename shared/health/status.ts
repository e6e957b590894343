import { accessSync, constants } from 'node:fs';
import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { z } from 'zod';
import { provisionalSummary } from '../catalog/provisional.ts';
import { POOLS, type Pool } from '../jobs/queues.ts';
import { itemFilesStatus, renderModeSummary } from '../media/item-files.ts';
import type { Queryable } from '../platform/db.ts';
import { salesReaderStates, salesReadersSchema } from '../prices/sales.ts';
import { fxStateSchema } from './fx.ts';
import { liveWorkersByPool } from './heartbeats.ts';
import { sourceFreshness, sourceStateSchema } from './sources.ts';

/**
 * Each source as /v2/status shows it: every enabled one as on GET /health, and each source SOURCES
 * names that cannot run (docs/design.md §14: skinbaron without SOURCE_SKINBARON_KEY) as `unavailable` with the
 * reason. An unavailable source is a configuration choice, not a failure: it is not in `degraded`.
 */
const statusSourcesSchema = z.record(
  z.string(),
  z.union([
    sourceStateSchema,
    z.object({
      status: z.literal('unavailable'),
      reason: z.string().describe('Why it cannot run, e.g. its required key is not set'),
      updated_at: z.null(),
      unknown_names: z.null(),
      rows_skipped: z.null(),
    }),
  ]),
);

const CHECK_TIMEOUT_MS = 1_500;

const componentStatus = z.enum(['ok', 'degraded', 'down']);
export const platformStatusSchema = z.object({
  status: z.enum(['ok', 'degraded']),
  checked_at: z.string(),
  degraded: z
    .array(z.string())
    .describe('The components that are not ok, as dotted paths (`redis`, `queues.<pool>`, `workers.<pool>`, `sources.<name>`, `fx`, `catalog`)'),
  components: z.object({
    database: z.object({ status: componentStatus, latency_ms: z.number() }),
    redis: z.object({ status: componentStatus, latency_ms: z.number().nullable().describe('Null when Redis did not answer') }),
    queues: z
      .record(
        z.string(),
        z.object({
          status: componentStatus,
          // Null when the queue's counts could not be read.
          waiting: z.number().int().nullable(),
          active: z.number().int().nullable(),
          delayed: z.number().int().nullable(),
          failed: z.number().int().nullable(),
        }),
      )
      .describe('Job counts per worker pool; null counts when the queue could not be read'),
    workers: z
      .record(z.string(), z.object({ status: componentStatus, live: z.number().int(), last_seen_at: z.string().nullable() }))
      .describe('Live workers per pool, by heartbeat'),
    sources: statusSourcesSchema.describe(
      'Each enabled price source as on GET /health; a source SOURCES names that cannot run (skinbaron without its key) as `unavailable` with the reason',
    ),
    /** The exchange rates, as on GET /health. */
    fx: fxStateSchema,
    sales: salesReadersSchema.nullable(),
    catalog: z
      .object({
        status: componentStatus.describe('down when the counts could not be read'),
        provisional_items: z.number().int().nullable().describe('Items added from market names before @ianlucas/cs2-lib knew them (`provisional: true`)'),
        unparsed_names: z
          .object({
            count: z.number().int(),
            names: z.array(z.string()).describe('The first 20, newest first'),
          })
          .nullable()
          .describe(
            'Names seen on two price sources (or on Steam) that the catalog lacks and that do not parse unambiguously into one item, so they are not priced',
          ),
      })
      .describe(
        'New items (docs/design.md §19): market names the catalog lacks become provisional items; those that cannot be read are counted here. Unparsed names do not make the status degraded.',
      ),
    gameplatform: z
      .object({
        steam_web_api: z.object({
          status: z.enum(['ok', 'unavailable']).describe('unavailable: STEAM_WEB_API_KEY is not set, so profiles answer 503'),
          last_success_at: z.string().nullable().describe('The newest profile fetched from Steam'),
        }),
        steam_community: z.object({
          status: z.enum(['ok']),
          last_success_at: z.string().nullable().describe('The newest inventory snapshot fetched from Steam'),
        }),
        automation: z.object({
          status: z.enum(['unavailable']),
          reason: z.string(),
        }),
      })
      .describe('Steam upstreams and game-platform automation (docs/design.md §11: trade offers are drafted and reserved here, never sent to Steam)'),
    media: z
      .object({
        item_files: z.object({
          status: z.enum(['ok', 'unavailable']).describe('unavailable: ITEM_FILES_DIR has no models (run npm run item-files:generate)'),
          models: z.number().int(),
          paints: z.number().int(),
          stickers: z.number().int(),
          charms: z.number().int(),
        }),
        chromium: z.object({ status: z.enum(['ok', 'unavailable']).describe('unavailable: no executable at CHROMIUM_PATH'), path: z.string() }),
        renders: z
          .object({
            mode: z
              .enum(['3d', 'card', 'mixed'])
              .describe(
                'How renders and viewer sessions draw items (docs/design.md §18): `card` (item cards) when no model in ITEM_FILES_DIR is a real 3D model (generated stand-ins only, or none), `3d` when every model is real, `mixed` when some are (those definitions in 3D, the others as cards)',
              ),
            real_models: z.number().int().describe('Models that are not generated stand-ins (fetched by npm run item-files:fetch, or extracted game files)'),
            stand_in_models: z.number().int(),
          })
          .describe('The renders and viewer sessions component'),
      })
      .describe(
        'What renders and the viewer need (docs/design.md §10, §18); without Chromium renders answer 503 renderer_unavailable, and without real models items are drawn as cards',
      ),
  }),
});
export type PlatformStatus = z.infer<typeof platformStatusSchema>;

function withTimeout<T>(promise: Promise<T>, ms = CHECK_TIMEOUT_MS): Promise<T> {
  let timer: Timer | undefined;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out')), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function timed<T>(check: () => Promise<T>): Promise<{ ok: true; value: T; ms: number } | { ok: false; ms: number }> {
  const started = performance.now();
  try {
    const value = await withTimeout(check());
    return { ok: true, value, ms: Math.round((performance.now() - started) * 10) / 10 };
  } catch {
    return { ok: false, ms: Math.round(performance.now() - started) };
  }
}

/**
 * Database, Redis, every queue's depth and failures, and live workers per pool, each check bounded
 * in time. Returns null when the database (which holds heartbeats) cannot be reached: without it
 * no status can be assembled (docs/interface.md §4: 503).
 */
export async function platformStatus(input: {
  sql: Queryable;
  redis: Redis;
  queues: Record<Pool, Queue>;
  now: () => Date;
  sources: readonly string[];
  /** Sources SOURCES names that cannot run (shared/sources/settings.ts unavailableSources). */
  unavailableSources?: readonly { name: string; reason: string }[];
  steamWebApiKeyConfigured: boolean;
  itemFilesDir: string;
  chromiumPath: string;
}): Promise<PlatformStatus | null> {
  const now = input.now();
  const [database, redis, workers, sources, steam, catalog, ...queueCounts] = await Promise.all([
    timed(() => input.sql`select 1`),
    timed(() => input.redis.ping()),
    timed(() => liveWorkersByPool(input.sql, now)),
    timed(() => sourceFreshness(input.sql, input.sources, now)),
    timed(() => newestSteamFetches(input.sql)),
    timed(() => provisionalSummary(input.sql)),
    ...POOLS.map((pool) => timed(() => input.queues[pool].getJobCounts('waiting', 'active', 'delayed', 'failed'))),
  ]);
  const sales = await timed(() => salesReaderStates(input.sql));
  if (!database.ok || !workers.ok || !sources.ok) return null;
  const degraded: string[] = [];
  if (!redis.ok) degraded.push('redis');
  const queues: PlatformStatus['components']['queues'] = {};
  const workerStatus: PlatformStatus['components']['workers'] = {};
  POOLS.forEach((pool, index) => {
    const counts = queueCounts[index]!;
    if (counts.ok) {
      const value = counts.value as Record<string, number>;
      queues[pool] = { status: 'ok', waiting: value.waiting ?? 0, active: value.active ?? 0, delayed: value.delayed ?? 0, failed: value.failed ?? 0 };
    } else {
      queues[pool] = { status: 'down', waiting: null, active: null, delayed: null, failed: null };
      degraded.push(`queues.${pool}`);
    }
    const live = workers.value.get(pool);
    workerStatus[pool] = { status: live ? 'ok' : 'down', live: live?.live ?? 0, last_seen_at: live?.lastSeenAt.toISOString() ?? null };
    if (!live) degraded.push(`workers.${pool}`);
  });
  for (const [name, source] of Object.entries(sources.value.sources)) {
    if (source.status !== 'fresh') degraded.push(`sources.${name}`);
  }
  if (sources.value.fx.status !== 'fresh') degraded.push('fx');
  if (!catalog.ok) degraded.push('catalog');
  return {
    status: degraded.length === 0 ? 'ok' : 'degraded',
    checked_at: now.toISOString(),
    degraded,
    components: {
      database: { status: 'ok', latency_ms: database.ms },
      redis: { status: redis.ok ? 'ok' : 'down', latency_ms: redis.ok ? redis.ms : null },
      queues,
      workers: workerStatus,
      sources: {
        ...sources.value.sources,
        ...Object.fromEntries(
          (input.unavailableSources ?? []).map(({ name, reason }) => [
            name,
            { status: 'unavailable' as const, reason, updated_at: null, unknown_names: null, rows_skipped: null },
          ]),
        ),
      },
      fx: sources.value.fx,
      sales: sales.ok ? sales.value : null,
      catalog: catalog.ok ? { status: 'ok', ...catalog.value } : { status: 'down', provisional_items: null, unparsed_names: null },
      gameplatform: {
        // Not part of `degraded`: a deployment without a Steam key simply does not offer profiles.
        steam_web_api: { status: input.steamWebApiKeyConfigured ? 'ok' : 'unavailable', last_success_at: steam.ok ? steam.value.profile : null },
        steam_community: { status: 'ok', last_success_at: steam.ok ? steam.value.inventory : null },
        automation: { status: 'unavailable', reason: 'Trade intents are drafted and their assets reserved here; offers are not sent to Steam.' },
      },
      // Not part of `degraded` either: a deployment may run without renders.
      media: mediaStatus(input.itemFilesDir, input.chromiumPath),
    },
  };
}

/** When Steam last answered us: the newest cached profile and inventory snapshot. */
async function newestSteamFetches(sql: Queryable): Promise<{ profile: string | null; inventory: string | null }> {
  const [row] = await sql<{ profile: Date | null; inventory: Date | null }[]>`
    select (select max(fetched_at) from steam_profiles) as profile,
           (select max(fetched_at) from inventory_snapshots) as inventory`;
  return { profile: row?.profile?.toISOString() ?? null, inventory: row?.inventory?.toISOString() ?? null };
}

function mediaStatus(itemFilesDir: string, chromiumPath: string): PlatformStatus['components']['media'] {
  const files = itemFilesStatus(itemFilesDir);
  let chromium: 'ok' | 'unavailable' = 'ok';
  try {
    accessSync(chromiumPath, constants.X_OK);
  } catch {
    chromium = 'unavailable';
  }
  return {
    item_files: { status: files.status === 'ok' ? 'ok' : 'unavailable', ...files.counts },
    chromium: { status: chromium, path: chromiumPath },
    renders: renderModeSummary(itemFilesDir),
  };
}
