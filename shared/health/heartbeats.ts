import type { Queryable } from '../platform/db.ts';

export const HEARTBEAT_INTERVAL_MS = 10_000;
/** A worker not seen for this long is considered gone. */
export const HEARTBEAT_LIVE_MS = 3 * HEARTBEAT_INTERVAL_MS;

export async function upsertHeartbeat(
  db: Queryable,
  worker: { workerId: string; pool: string; hostname: string; pid: number; startedAt: Date },
  now: Date,
): Promise<void> {
  await db`
    insert into worker_heartbeats (worker_id, pool, hostname, pid, started_at, last_seen_at)
    values (${worker.workerId}, ${worker.pool}, ${worker.hostname}, ${worker.pid}, ${worker.startedAt}, ${now})
    on conflict (worker_id) do update set last_seen_at = excluded.last_seen_at`;
}

export async function deleteHeartbeat(db: Queryable, workerId: string): Promise<void> {
  await db`delete from worker_heartbeats where worker_id = ${workerId}`;
}

export async function liveWorkersByPool(db: Queryable, now: Date): Promise<Map<string, { live: number; lastSeenAt: Date }>> {
  const rows = await db<{ pool: string; live: number; last_seen_at: Date }[]>`
    select pool, count(*)::int as live, max(last_seen_at) as last_seen_at from worker_heartbeats
    where last_seen_at > ${new Date(now.getTime() - HEARTBEAT_LIVE_MS)} group by pool`;
  return new Map(rows.map((row) => [row.pool, { live: row.live, lastSeenAt: row.last_seen_at }]));
}

export async function deleteStaleHeartbeats(db: Queryable, now: Date): Promise<number> {
  const rows = await db`delete from worker_heartbeats where last_seen_at < ${new Date(now.getTime() - 24 * 3_600_000)} returning 1`;
  return rows.length;
}
