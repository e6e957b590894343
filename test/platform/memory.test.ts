import { describe, expect, test } from 'bun:test';
import { MemoryReleaser } from '../../shared/platform/memory.ts';

describe('MemoryReleaser', () => {
  test('collects once the resident set has grown past the headroom, at most once per interval', () => {
    // Any growth at all, even none: RSS can shrink right after a collection, below the floor it set.
    const eager = new MemoryReleaser({ headroomBytes: Number.NEGATIVE_INFINITY, minIntervalMs: 0 });
    eager.afterWork();
    eager.afterWork();
    expect(eager.collections).toBe(2);

    const throttled = new MemoryReleaser({ headroomBytes: Number.NEGATIVE_INFINITY, minIntervalMs: 60_000 });
    throttled.afterWork();
    throttled.afterWork();
    expect(throttled.collections).toBe(1);

    const roomy = new MemoryReleaser({ headroomBytes: 1024 * 1024 * 1024, minIntervalMs: 0 });
    roomy.afterWork();
    expect(roomy.collections).toBe(0);
  });

  test('garbage left by a heavy job is returned: RSS after the collection is well below the peak', () => {
    const headroom = 32 * 1024 * 1024;
    const releaser = new MemoryReleaser({ headroomBytes: headroom, minIntervalMs: 0 });
    const start = process.memoryUsage.rss();
    // Allocate until the resident set has really grown past the headroom: in a full run this process
    // may hold freed pages from earlier suites that a fixed allocation would reuse without growing.
    let garbage: string[][] | null = [];
    for (let chunk = 0; chunk < 40 && process.memoryUsage.rss() - start < 2 * headroom; chunk += 1) {
      garbage.push(Array.from({ length: 100_000 }, (_, index) => `row ${chunk} ${index} ${'x'.repeat(200)}`));
    }
    const peak = process.memoryUsage.rss();
    expect(peak - start).toBeGreaterThanOrEqual(headroom);
    garbage = null;
    releaser.afterWork();
    expect(releaser.collections).toBe(1);
    expect(process.memoryUsage.rss()).toBeLessThan(peak);
  });
});
