/**
 * The item cards' part of `npm run bench:media` (issue 31, docs/design.md §18): card renders of 512×384 PNG
 * on the warm pool of the render worker bench/media.ts runs, `BENCH_CARD_RENDERS` of them (default
 * 2 000): an AK-47 | Redline with two stickers, a name tag and StatTrak (its model a generated
 * stand-in, so `mode: card`), images from the local image fake through the image cache. Each render
 * has its own StatTrak count (a distinct request drawing the same images, as a showcase's cards of
 * one item would), accepted through the API app in windows of BENCH_CARD_WINDOW so acceptance and drawing
 * overlap as in production. Judged: throughput ≥ 20 PNG/s over the whole run, and the pool's memory
 * steady (the worker's RSS plus the PSS of its Chromium's processes, sampled every 250 ms: start,
 * after the first 10 %, each quarter, end, peak; judged from a quarter of the run to its end).
 */
import { readdirSync, readFileSync } from 'node:fs';
import type { Sql } from '../shared/platform/db.ts';
import { positiveInt, say } from './lib.ts';

export const CARD_ITEM = {
  item: { family: 'weapon', definition_index: 7 },
  state: {
    paint_index: 282,
    wear: 0.2153,
    stattrak: { value: 1337 },
    name_tag: 'Showcase',
    stickers: [
      { slot: 0, sticker_id: 4 },
      { slot: 2, sticker_id: 76 },
    ],
  },
};

/** Resident memory of a process, MB; 0 once it is gone. */
function rssOf(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/**
 * Proportional resident memory (PSS), MB: pages shared between Chromium's processes counted once
 * across them, so a sum over the browser's processes is what it really holds (a sum of RSS counts the
 * shared libraries and shared memory once per process).
 */
function pssOf(pid: number): number {
  try {
    return Number(/Pss:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

/** The PSS of every process below `root` (its Chromium and that browser's renderers, GPU and utility processes), MB. */
function descendantsPss(root: number): number {
  const children = new Map<number, number[]>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // The parent pid is the 4th field of /proc/<pid>/stat, after the command in parentheses.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      const parent = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      children.set(parent, [...(children.get(parent) ?? []), Number(name)]);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  const stack = [...(children.get(root) ?? [])];
  while (stack.length > 0) {
    const pid = stack.pop()!;
    total += pssOf(pid);
    stack.push(...(children.get(pid) ?? []));
  }
  return total;
}

export type CardBenchContext = {
  sql: Sql;
  workspaceId: string;
  workerPid: number;
  /** Accepts the `index`th card render (POST /v2/renders through the API app), a request of its own; resolves to its id. */
  accept(index: number): Promise<string>;
};

export async function benchCardRenders(context: CardBenchContext): Promise<[string, boolean, string][]> {
  const total = positiveInt('BENCH_CARD_RENDERS', 2_000);
  const window = positiveInt('BENCH_CARD_WINDOW', 64);
  const finished = async () => {
    const [row] = await context.sql<{ succeeded: number; failed: number }[]>`
      select count(*) filter (where state = 'succeeded')::int as succeeded, count(*) filter (where state = 'failed')::int as failed
      from renders where workspace_id = ${context.workspaceId} and mode = 'card'`;
    return row!;
  };
  const before = await finished();
  const samples: { done: number; worker: number; chromium: number }[] = [];
  let done = 0;
  const sample = () => samples.push({ done, worker: rssOf(context.workerPid), chromium: descendantsPss(context.workerPid) });
  sample();
  const sampler = setInterval(sample, 250);
  const started = performance.now();
  let accepted = 0;
  try {
    while (done < total) {
      // Keep `window` renders queued or drawing: accept more as earlier ones finish.
      const counts = await finished();
      if (counts.failed > before.failed) throw new Error(`${counts.failed - before.failed} card renders failed`);
      done = counts.succeeded - before.succeeded;
      const wanted = Math.min(total, done + window) - accepted;
      if (wanted > 0) {
        const ids = await Promise.all(Array.from({ length: wanted }, (_, index) => context.accept(accepted + index)));
        accepted += ids.length;
      }
      if (performance.now() - started > 600_000) throw new Error(`only ${done} of ${total} card renders in 10 minutes`);
      await Bun.sleep(20);
    }
  } finally {
    clearInterval(sampler);
  }
  sample();
  const seconds = (performance.now() - started) / 1000;
  const rate = total / seconds;
  const last = samples[samples.length - 1]!;
  const at = (share: number) => samples.find((entry) => entry.done >= total * share) ?? last;
  const afterWarm = at(0.1);
  const peak = samples.reduce((max, entry) => Math.max(max, entry.worker + entry.chromium), 0);
  const totalOf = (entry: { worker: number; chromium: number }) => entry.worker + entry.chromium;
  say(
    `${total} card renders 512x384 PNG (AK-47 | Redline, 2 stickers, name tag, StatTrak) in ${seconds.toFixed(1)} s: ${rate.toFixed(1)} PNG/s (target >= 20)`,
  );
  const show = (entry: { worker: number; chromium: number }) => `${entry.worker.toFixed(0)} + ${entry.chromium.toFixed(0)} = ${totalOf(entry).toFixed(0)}`;
  say(
    `render pool memory, MB (worker RSS + its Chromium's PSS): start ${show(samples[0]!)}; after ${afterWarm.done} renders ${show(afterWarm)}; ` +
      `${at(0.25).done}: ${show(at(0.25))}; ${at(0.5).done}: ${show(at(0.5))}; ${at(0.75).done}: ${show(at(0.75))}; end ${show(last)}; peak ${peak.toFixed(0)}`,
  );
  // Steady: Chromium's heaps settle over the first few hundred cards (four pages, each its own
  // renderer); from a quarter of the run to its end the pool grows by less than a tenth and 64 MB.
  const settled = at(0.25);
  const growth = totalOf(last) - totalOf(settled);
  return [
    ['card renders 512x384 PNG >= 20/s', rate >= 20, `${rate.toFixed(1)}/s`],
    [
      `render pool memory steady over the card renders (growth from ${settled.done} renders to the end < 10 % and < 64 MB)`,
      growth < Math.min(64, totalOf(settled) * 0.1),
      `${growth >= 0 ? '+' : ''}${growth.toFixed(0)} MB`,
    ],
  ];
}
