import type { Logger } from '../platform/logger.ts';
import type { DerivedListRequest } from './derived-list.ts';
import type { DerivedListJob, DerivedListReply } from './derived-list-thread.ts';
import type { SnapshotIndex } from './snapshot-index.ts';

/**
 * Builds derived keyless lists (per source, per currency: derived-list.ts) and new snapshots'
 * indexes (snapshot-index.ts) in worker threads, so the API's event loop only waits for them
 * (docs/design.md §21, docs/architecture.md). Bounded: at most `threads` threads (default 1: the builds
 * compete with the event loop for the machine's cores, and one at a time keeps at most one parse's
 * garbage alive); the rest wait in a queue in arrival order, a snapshot's index ahead of the lists.
 * A thread left idle for `idleMs` is ended (its heap goes with it) and started again at the next job.
 * A job that fails, or outlives `timeoutMs` (its thread is then ended), rejects: callers do not keep
 * a failed build. `close()` ends every thread and rejects what was pending.
 */

export type DerivedListPoolOptions = {
  threads?: number;
  /** How long a thread may sit idle before it is ended (default 30 s). */
  idleMs?: number;
  /** A backstop for a thread that never answers (default 5 min; a build takes seconds). */
  timeoutMs?: number;
  log?: Logger;
};

export type DerivedListResult = { json: Buffer; etag: string };

type Job = {
  message: DerivedListJob;
  resolve: (reply: DerivedListReply & { ok: true }) => void;
  reject: (error: Error) => void;
};

type Thread = { worker: Worker; job: Job | null; timer: ReturnType<typeof setTimeout> | null };

export class DerivedListPoolClosedError extends Error {
  constructor() {
    super('the derived-list pool is closed');
    this.name = 'DerivedListPoolClosedError';
  }
}

const THREAD_URL = new URL('./derived-list-thread.ts', import.meta.url);

export class DerivedListPool {
  private readonly maxThreads: number;
  private readonly idleMs: number;
  private readonly timeoutMs: number;
  private readonly log: Logger | undefined;
  private readonly queue: Job[] = [];
  private readonly threads = new Set<Thread>();
  private nextId = 1;
  private closed = false;
  /** Threads started so far (tests: a pool that ends idle threads starts new ones). */
  started = 0;

  constructor(options: DerivedListPoolOptions = {}) {
    this.maxThreads = Math.max(1, options.threads ?? 1);
    this.idleMs = options.idleMs ?? 30_000;
    this.timeoutMs = options.timeoutMs ?? 300_000;
    this.log = options.log;
  }

  /** Threads alive, builds running, builds waiting (for tests and logs). */
  get stats(): { threads: number; running: number; queued: number } {
    let running = 0;
    for (const thread of this.threads) if (thread.job) running += 1;
    return { threads: this.threads.size, running, queued: this.queue.length };
  }

  /**
   * Builds one derived list from `json`, the snapshot's full list. Pass a view of a
   * SharedArrayBuffer: it reaches the thread without a copy (any other view is copied once per build).
   */
  async build(json: Uint8Array, request: DerivedListRequest): Promise<DerivedListResult> {
    const reply = await this.submit({ id: this.nextId++, kind: 'list', json, request }, false);
    if (reply.kind !== 'list') throw new Error('derived-list thread answered another job');
    return { json: Buffer.from(reply.json.buffer, reply.json.byteOffset, reply.json.byteLength), etag: reply.etag };
  }

  /** A new snapshot's index (snapshot-index.ts), ahead of the lists waiting. `json` as for build. */
  async index(json: Uint8Array): Promise<SnapshotIndex> {
    const reply = await this.submit({ id: this.nextId++, kind: 'index', json }, true);
    if (reply.kind !== 'index') throw new Error('derived-list thread answered another job');
    return reply.index;
  }

  private submit(message: DerivedListJob, first: boolean): Promise<DerivedListReply & { ok: true }> {
    if (this.closed) return Promise.reject(new DerivedListPoolClosedError());
    return new Promise((resolve, reject) => {
      const job = { message, resolve, reject };
      if (first) {
        const lists = this.queue.findIndex((waiting) => waiting.message.kind === 'list');
        this.queue.splice(lists < 0 ? this.queue.length : lists, 0, job);
      } else this.queue.push(job);
      this.dispatch();
    });
  }

  /** Ends every thread; pending and running builds reject with DerivedListPoolClosedError. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const job of this.queue.splice(0)) job.reject(new DerivedListPoolClosedError());
    for (const thread of [...this.threads]) this.end(thread, new DerivedListPoolClosedError());
  }

  private dispatch(): void {
    while (this.queue.length > 0) {
      let thread: Thread | undefined;
      for (const candidate of this.threads) {
        if (!candidate.job) {
          thread = candidate;
          break;
        }
      }
      if (!thread) {
        if (this.threads.size >= this.maxThreads) return;
        thread = this.spawn();
      }
      this.run(thread, this.queue.shift()!);
    }
  }

  private spawn(): Thread {
    const worker = new Worker(THREAD_URL);
    // Only a thread with a build keeps the process alive.
    worker.unref();
    const thread: Thread = { worker, job: null, timer: null };
    this.threads.add(thread);
    this.started += 1;
    worker.onmessage = (event: MessageEvent<DerivedListReply>) => this.reply(thread, event.data);
    worker.onerror = (event: ErrorEvent) => {
      event.preventDefault();
      this.log?.warn({ err: event.message }, 'derived-list thread failed');
      this.end(thread, new Error(`derived-list thread failed: ${event.message}`));
      this.dispatch();
    };
    worker.addEventListener('close', () => {
      if (!this.threads.has(thread)) return;
      this.end(thread, new Error('derived-list thread exited'));
      this.dispatch();
    });
    return thread;
  }

  private run(thread: Thread, job: Job): void {
    if (thread.timer) clearTimeout(thread.timer);
    thread.job = job;
    thread.worker.ref();
    thread.timer = setTimeout(() => {
      const request = job.message.kind === 'list' ? job.message.request : 'index';
      this.log?.warn({ timeout_ms: this.timeoutMs, request }, 'derived-list thread timed out: thread ended');
      this.end(thread, new Error(`derived list not built within ${this.timeoutMs} ms`));
      this.dispatch();
    }, this.timeoutMs);
    thread.worker.postMessage(job.message);
  }

  private reply(thread: Thread, reply: DerivedListReply): void {
    const job = thread.job;
    if (!job || job.message.id !== reply.id) return;
    if (thread.timer) clearTimeout(thread.timer);
    thread.job = null;
    thread.worker.unref();
    if (reply.ok) job.resolve(reply);
    else job.reject(new Error(`derived list not built: ${reply.message}`));
    thread.timer = setTimeout(() => {
      if (!thread.job) this.end(thread, null);
    }, this.idleMs);
    thread.timer.unref();
    this.dispatch();
  }

  /** Removes and terminates `thread`; its running build, if any, rejects with `error`. */
  private end(thread: Thread, error: Error | null): void {
    if (!this.threads.delete(thread)) return;
    if (thread.timer) clearTimeout(thread.timer);
    const job = thread.job;
    thread.job = null;
    if (job) job.reject(error ?? new Error('derived-list thread ended'));
    thread.worker.terminate();
  }
}
