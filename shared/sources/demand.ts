import type { Redis } from 'ioredis';
import type { Queryable } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import type { SourceName } from '../platform/source-names.ts';
import { stalestNamesForSource } from '../prices/ingest.ts';

/**
 * Which names a per-item source reads (docs/design.md §19: steam's priceoverview, "names seen in keyed price
 * reads and inventories first"; docs/decisions.md "Steam in bulk").
 *
 * Demand: a Redis sorted set, `<QUEUE_PREFIX>:price-demand`, of catalog ids scored by when they were
 * last asked about (ms): written by GET /v2/prices/{id} once the item is found, and by every inventory
 * snapshot stored (its assets' catalog items). Catalog ids rather than names: the keyed route has the
 * id at hand, and only ids of existing items get in. Kept to the DEMAND_CAP most recently asked.
 * Writes leave the request path at once: each process gathers the ids it saw and sends them at most
 * once a second (PriceDemand), and a failed write is logged, never the request's failure.
 *
 * Turns: a second sorted set per source, `<QUEUE_PREFIX>:sales-turns:{<source>}`, of market hash
 * names scored by when a run last picked them. A run picks, up to its batch: the asked names whose
 * turn is older than SALES_TURN_INTERVAL_MS (or never came), least recently read first; then the
 * stalest catalog names (stalestNamesForSource) whose turn is as old. A name's turn is recorded when
 * it is picked, so a run that fails before reading it gives it its next turn an interval later.
 */

/** The most recently asked catalog ids kept. */
export const DEMAND_CAP = 10_000;
/** A name is read again at most this often (Steam's 24 h window moves slowly). */
export const SALES_TURN_INTERVAL_MS = 3_600_000;
/** Turns kept per source: more than the catalog's ~38 000 names, the oldest dropped beyond. */
const TURNS_CAP = 60_000;
/** Ids gathered before a process sends them without waiting for its next second. */
const MAX_PENDING = 1_000;
const FLUSH_MS = 1_000;

export const priceDemandKey = (queuePrefix: string) => `${queuePrefix}:price-demand`;
export const salesTurnsKey = (queuePrefix: string, source: SourceName) => `${queuePrefix}:sales-turns:{${source}}`;

/** Records asked-about catalog ids for this process (see the module comment); `record` never waits nor throws. */
export class PriceDemand {
  private pending = new Set<string>();
  private timer: ReturnType<typeof setTimeout> | null = null;

  constructor(
    private readonly redis: Redis,
    private readonly queuePrefix: string,
    private readonly log: Logger,
    private readonly clock: () => number = Date.now,
  ) {}

  record(catalogIds: Iterable<string>): void {
    for (const id of catalogIds) this.pending.add(id);
    if (this.pending.size >= MAX_PENDING) void this.flush();
    else if (this.pending.size > 0 && this.timer === null) {
      this.timer = setTimeout(() => void this.flush(), FLUSH_MS);
      this.timer.unref?.();
    }
  }

  /** Sends what was gathered (tests and shutdown call it; otherwise a timer does). */
  async flush(): Promise<void> {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.size === 0) return;
    const ids = [...this.pending];
    this.pending = new Set();
    const at = this.clock();
    const key = priceDemandKey(this.queuePrefix);
    try {
      await this.redis.zadd(key, ...ids.flatMap((id) => [at, id]));
      await this.redis.zremrangebyrank(key, 0, -(DEMAND_CAP + 1));
    } catch (error) {
      this.log.warn({ err: (error as Error).message, ids: ids.length }, 'could not record which items were asked about');
    }
  }
}

type PickDeps = { sql: Queryable; redis: Redis; queuePrefix: string; now: () => Date };

/** Each name's last turn (ms), null when it never had one. */
async function turnsOf(redis: Redis, key: string, names: readonly string[]): Promise<(number | null)[]> {
  if (names.length === 0) return [];
  const scores = await redis.zmscore(key, ...names);
  return scores.map((score) => (score === null ? null : Number(score)));
}

/** Up to `limit` names for this run of `source` (see the module comment), their turns recorded. */
export async function namesToRead(deps: PickDeps, source: SourceName, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const now = deps.now().getTime();
  const dueAt = now - SALES_TURN_INTERVAL_MS;
  const turnsKey = salesTurnsKey(deps.queuePrefix, source);
  const picked: string[] = [];
  const chosen = new Set<string>();

  const askedIds = await deps.redis.zrevrange(priceDemandKey(deps.queuePrefix), 0, DEMAND_CAP - 1);
  if (askedIds.length > 0) {
    const rows = await deps.sql<{ catalog_id: string; market_hash_name: string }[]>`
      select catalog_id, market_hash_name from catalog_items where catalog_id = any(${askedIds}::text[])`;
    const nameOf = new Map(rows.map((row) => [row.catalog_id, row.market_hash_name]));
    // Most recently asked first; a name asked under two ids counts once.
    const asked = [...new Set(askedIds.flatMap((id) => nameOf.get(id) ?? []))];
    const turns = await turnsOf(deps.redis, turnsKey, asked);
    const due = asked.map((name, order) => ({ name, order, turn: turns[order] ?? null })).filter((entry) => entry.turn === null || entry.turn <= dueAt);
    // Never read first, then least recently read; ties in asking order.
    due.sort((a, b) => (a.turn ?? -1) - (b.turn ?? -1) || a.order - b.order);
    for (const { name } of due.slice(0, limit)) {
      picked.push(name);
      chosen.add(name);
    }
  }

  if (picked.length < limit) {
    // The stalest names, past those that had a turn within the interval (at most that many are skipped).
    const recent = await deps.redis.zcount(turnsKey, `(${dueAt}`, '+inf');
    const candidates = await stalestNamesForSource(deps.sql, source, limit - picked.length + Math.min(recent, TURNS_CAP));
    const turns = await turnsOf(deps.redis, turnsKey, candidates);
    for (const [index, name] of candidates.entries()) {
      if (picked.length >= limit) break;
      const turn = turns[index] ?? null;
      if (chosen.has(name) || (turn !== null && turn > dueAt)) continue;
      picked.push(name);
      chosen.add(name);
    }
  }

  if (picked.length > 0) {
    await deps.redis.zadd(turnsKey, ...picked.flatMap((name) => [now, name]));
    await deps.redis.zremrangebyrank(turnsKey, 0, -(TURNS_CAP + 1));
  }
  return picked;
}
