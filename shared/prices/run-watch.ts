import type { Sql } from '../platform/db.ts';
import type { Logger } from '../platform/logger.ts';
import { findIngestRunMarker } from './repository.ts';

/**
 * Which ingest runs this API process has seen, as a generation number that moves on whenever prices
 * may have changed. Caches of price reads (item prices, history pages) tag what they load with the
 * generation at the start of the load and reuse it while the generation stays the same, so an
 * entry lives until the next ingest run, not for a fixed time.
 *
 * The bound: a read is never answered from a generation whose last check against Postgres
 * (findIngestRunMarker, one tiny query) started more than `boundMs` ago. Past half the bound a
 * request starts a check in the background and is answered at once; past the whole bound (after an
 * idle spell) requests wait for the check. So a process serves prices older than the newest
 * committed ingest run for at most `boundMs` plus one query, even when every Redis announcement is
 * lost; the announcements (new snapshot, on Redis) move the generation at once. Checks happen only
 * while requests come in: an idle process costs nothing.
 */
export class PriceRunWatch {
  /** Checks completed so far (tests wait on it instead of sleeping). */
  checks = 0;
  private current = 0;
  private marker: string | null = null;
  /** performance.now() at the start of the last successful check. */
  private checkedAt = Number.NEGATIVE_INFINITY;
  private checking: Promise<void> | null = null;
  private recheck = false;

  constructor(
    private readonly sql: Sql,
    private readonly log: Logger,
    readonly boundMs: number,
  ) {}

  /**
   * The generation to read under: at once while the last check is recent, else after a check.
   * Rejects when that check fails (Postgres unreachable), rather than answer past the bound.
   */
  generation(): number | Promise<number> {
    const age = performance.now() - this.checkedAt;
    if (age < this.boundMs / 2) return this.current;
    if (age < this.boundMs) {
      this.checkInBackground();
      return this.current;
    }
    return this.check().then(() => this.current);
  }

  /** Prices may have changed (a new snapshot or run was announced): everything loaded so far is old. */
  changed(): void {
    this.current += 1;
    // Take in the new marker now (after a check in flight, which may predate the run), so a later
    // check does not count the same run again and drop what was loaded since.
    if (this.checking) this.recheck = true;
    else this.checkInBackground();
  }

  private checkInBackground(): void {
    this.check().catch((error: Error) => this.log.warn({ err: error.message }, 'could not check for new ingest runs'));
  }

  private check(): Promise<void> {
    if (this.checking) return this.checking;
    const startedAt = performance.now();
    this.checking = findIngestRunMarker(this.sql)
      .then((marker) => {
        if (marker !== this.marker) {
          this.marker = marker;
          this.current += 1;
        }
        this.checkedAt = startedAt;
        this.checks += 1;
      })
      .finally(() => {
        this.checking = null;
        if (this.recheck) {
          this.recheck = false;
          this.checkInBackground();
        }
      });
    return this.checking;
  }
}
