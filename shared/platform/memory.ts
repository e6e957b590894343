/**
 * JavaScriptCore collects garbage lazily: a worker that has just built a 13 MB price snapshot or
 * parsed a full upstream page keeps hundreds of MB resident until some later allocation triggers a
 * collection (measured: a snapshot build left 250–600 MB resident; a full collection right after it,
 * a few ms, brought the process back to ~70 MB). `MemoryReleaser.afterWork()` runs a synchronous
 * full collection when the resident set has grown by `headroomBytes` since the last one, at most
 * once per `minIntervalMs`, so bursts of small jobs pay nothing and a process settles near its
 * live size between heavy jobs.
 */
export class MemoryReleaser {
  private floor: number;
  private lastAt = Number.NEGATIVE_INFINITY;
  /** Collections run so far (tests and logs read it). */
  collections = 0;

  constructor(private readonly options: { headroomBytes: number; minIntervalMs: number } = { headroomBytes: 32 * 1024 * 1024, minIntervalMs: 2_000 }) {
    this.floor = process.memoryUsage.rss();
  }

  afterWork(): void {
    const now = performance.now();
    if (now - this.lastAt < this.options.minIntervalMs) return;
    if (process.memoryUsage.rss() - this.floor < this.options.headroomBytes) return;
    this.lastAt = now;
    Bun.gc(true);
    this.collections += 1;
    // What the process really holds now: the next collection waits until it grows past this again.
    this.floor = process.memoryUsage.rss();
  }
}
