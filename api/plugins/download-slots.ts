/**
 * Concurrent downloads per client address, counted in this API process only (each process of a
 * deployment has its own count). A slot is held from the moment a body starts until it has been
 * handed over completely or the client has gone; `acquire` returns its release, safe to call twice.
 */
export class DownloadSlots {
  private readonly inUse = new Map<string, number>();

  constructor(readonly perClient: number) {}

  acquire(client: string): (() => void) | null {
    const count = this.inUse.get(client) ?? 0;
    if (count >= this.perClient) return null;
    this.inUse.set(client, count + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.inUse.get(client) ?? 1) - 1;
      // Addresses without downloads are forgotten, so the map is as large as the live downloads.
      if (left > 0) this.inUse.set(client, left);
      else this.inUse.delete(client);
    };
  }

  /** Downloads running for `client`, or for every client when omitted. */
  running(client?: string): number {
    if (client !== undefined) return this.inUse.get(client) ?? 0;
    let total = 0;
    for (const count of this.inUse.values()) total += count;
    return total;
  }
}

// Chunks are views of the shared buffer; the size bounds how much one slow reader can have queued in
// the server beyond what the kernel already holds. 1 MiB costs about what a Blob body costs in server
// CPU (256 KiB chunks cost ~40 % more per 2 MB body, measured against Bun.serve alone).
const CHUNK_BYTES = 1024 * 1024;

/**
 * A body streamed from one shared, immutable buffer. Bun copies an ArrayBuffer or Buffer handed to
 * `new Response()` into every response (measured: about the body's size per slow reader), while
 * enqueued views are written from the buffer itself. The stream also tells us when the download ends:
 * `done` runs once the last chunk has been handed to the server, or when the reader goes away.
 */
export function sharedBodyStream(bytes: Uint8Array, signal: AbortSignal, done: () => void): ReadableStream<Uint8Array> {
  let offset = 0;
  signal.addEventListener('abort', done, { once: true });
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const end = Math.min(offset + CHUNK_BYTES, bytes.length);
        if (end > offset) controller.enqueue(bytes.subarray(offset, end));
        offset = end;
        if (offset >= bytes.length) {
          controller.close();
          done();
        }
      },
      cancel: done,
    },
    // Pull only when the server asks for more, so a stalled client stalls the reads too.
    { highWaterMark: 0 },
  );
}
