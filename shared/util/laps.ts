/**
 * Milliseconds per step of a piece of work, for its log line and the benches: `lap(name)` records the
 * time since the previous lap (or since the timer was made) under `name`.
 */
export function lapTimer(): { timings: Record<string, number>; lap: (name: string) => void } {
  const timings: Record<string, number> = {};
  let mark = performance.now();
  return {
    timings,
    lap(name) {
      const now = performance.now();
      timings[name] = Math.round(now - mark);
      mark = now;
    },
  };
}
