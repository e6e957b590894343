import { describe, expect, test } from 'bun:test';
import { MemoryReleaser } from '../shared/platform/memory.ts';

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
    const releaser = new MemoryReleaser({ headroomBytes: 32 * 1024 * 1024, minIntervalMs: 0 });
    let garbage: string[] | null = Array.from({ length: 300_000 }, (_, index) => `row ${index} ${'x'.repeat(200)}`);
    const peak = process.memoryUsage.rss();
    expect(garbage.length).toBe(300_000);
    garbage = null;
    releaser.afterWork();
    expect(releaser.collections).toBe(1);
    expect(process.memoryUsage.rss()).toBeLessThan(peak);
  });
});
