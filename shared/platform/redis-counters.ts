import { createHash } from 'node:crypto';

/**
 * How often the command watchdog runs. A command times out once it has been out for the command
 * timeout and the watchdog has run commandTimeoutMs / WATCHDOG_MS times since it was sent.
 */
const WATCHDOG_MS = 100;

/** A command sent and not yet answered, in the order sent. */
type Outstanding = { command: string; sentAt: number; tick: number; reject: (error: Error) => void };

/** Bun rejects a command with this code when the connection closes under it or is closed when it is sent. */
const CONNECTION_CLOSED = 'ERR_REDIS_CONNECTION_CLOSED';

/**
 * Bun's built-in Redis client, for the one-command-per-request counters of the request path (usage
 * metering and the keyless per-address limit). Measured under load on /v1/prices/{name}, ioredis
 * (through Node's net compatibility layer) cost ~125 µs of API CPU per request and this client
 * ~75 µs; GET /v2/me, metering here in batches (shared/usage/metering.ts), takes ~14 µs a request
 * less than metering on ioredis. ioredis stays for BullMQ and pub/sub, which need it.
 *
 * Fails fast when Redis does, and only then (issue 29: a healthy Redis answered a metered request 503):
 * - No offline queue. A command that finds the link down waits for a reconnect, within the command
 *   timeout counted from when the link was first found down, then fails: a link a server or proxy
 *   closed is back within milliseconds and nobody sees it, while a Redis that is gone fails every
 *   command after its first second at once. A command the link dropped under is sent once more on
 *   the new link (had Redis run it, it counts twice, as it would had the client retried after a 503).
 * - A command timeout (1 s) that counts only time this process could have read the answer: a command
 *   times out after that long *and* WATCHDOG_MS ticks' worth of event-loop turns. A reply that came
 *   while the process was busy (a long synchronous stretch, or the handlers of many admitted requests
 *   running before the command was even written: Bun writes at the end of the turn) is read, never
 *   turned into a timeout. A Redis that stops answering still fails its commands within ~1.1 s.
 * - A reconnect is asked for whenever a command finds the link down, as Bun gives up after `maxRetries`.
 */
export class CounterRedis {
  private readonly client: Bun.RedisClient;
  private connecting: Promise<void> | null = null;
  private readonly scripts = new Map<string, string>();
  private readonly outstanding = new Set<Outstanding>();
  private readonly ticksPerTimeout: number;
  private ticks = 0;
  private watchdog: Timer | null = null;
  /** When a command first found the link down (performance.now()), until it is up again. */
  private downSince: number | null = null;
  private lastConnectError: string | null = null;
  private closed = false;

  constructor(
    url: string,
    private readonly commandTimeoutMs = 1_000,
  ) {
    this.ticksPerTimeout = Math.max(1, Math.ceil(commandTimeoutMs / WATCHDOG_MS));
    this.client = new Bun.RedisClient(url, { enableOfflineQueue: false, connectionTimeout: 2_000, autoReconnect: true, maxRetries: 10 });
    // Bun's own reconnects as well as ours.
    this.client.onconnect = () => {
      this.downSince = null;
      this.lastConnectError = null;
    };
    this.reconnect();
  }

  get connected(): boolean {
    return this.client.connected;
  }

  /** Resolves once a connection attempt in flight has settled: true when connected. */
  async ready(): Promise<boolean> {
    if (!this.client.connected) this.reconnect();
    await this.connecting;
    return this.client.connected;
  }

  /** Runs a Lua script by its SHA-1, loading it once per connection when Redis does not know it. Throws when Redis fails. */
  async evalScript(script: string, keys: string[], args: string[]): Promise<unknown> {
    let sha = this.scripts.get(script);
    if (!sha) {
      sha = createHash('sha1').update(script).digest('hex');
      this.scripts.set(script, sha);
    }
    const argv = [sha, String(keys.length), ...keys, ...args];
    try {
      return await this.send('EVALSHA', argv);
    } catch (error) {
      if (!String((error as Error).message).includes('NOSCRIPT')) throw error;
      argv[0] = script;
      return this.send('EVAL', argv);
    }
  }

  /** One plain command (HINCRBY, HGETALL, …). Throws when Redis fails. */
  command(name: string, args: string[]): Promise<unknown> {
    return this.send(name, args);
  }

  close(): void {
    this.closed = true;
    if (this.watchdog) clearInterval(this.watchdog);
    this.watchdog = null;
    this.client.close();
  }

  private send(command: string, args: string[]): Promise<unknown> {
    if (!this.client.connected) return this.afterReconnect(command, args);
    // Up again (onconnect says so too): the next drop gets its own grace.
    this.downSince = null;
    return this.timed(command, args, true);
  }

  /** Sends `command` on a link that is up; `retry`: once more on a new link if this one drops under it. */
  private timed(command: string, args: string[], retry: boolean): Promise<unknown> {
    return new Promise((resolve, reject) => {
      const call: Outstanding = { command, sentAt: performance.now(), tick: this.ticks, reject };
      this.outstanding.add(call);
      if (this.watchdog === null) {
        this.watchdog = setInterval(this.watch, WATCHDOG_MS);
        this.watchdog.unref();
      }
      this.client.send(command, args).then(
        (value) => {
          if (this.outstanding.delete(call)) resolve(value);
        },
        (error: unknown) => {
          // Already rejected by the watchdog when absent.
          if (!this.outstanding.delete(call)) return;
          if (retry && !this.closed && (error as { code?: string }).code === CONNECTION_CLOSED) {
            this.afterReconnect(command, args).then(resolve, reject);
          } else {
            reject(error);
          }
        },
      );
    });
  }

  /** Waits for the link (within the command timeout since it was first found down), then sends once. */
  private async afterReconnect(command: string, args: string[]): Promise<unknown> {
    const now = performance.now();
    this.downSince ??= now;
    const left = this.downSince + this.commandTimeoutMs - now;
    if (!this.client.connected) {
      this.reconnect();
      if (left > 0) await this.connectedWithin(left);
    }
    if (this.closed || !this.client.connected) {
      throw new Error(`redis is not connected${this.lastConnectError ? ` (${this.lastConnectError})` : ''}`);
    }
    return this.timed(command, args, false);
  }

  /** Resolves when the connection attempt in flight settles, or after `ms`, whichever is first. */
  private connectedWithin(ms: number): Promise<void> {
    let timer: Timer | undefined;
    const elapsed = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
    return Promise.race([this.connecting ?? Promise.resolve(), elapsed]).finally(() => clearTimeout(timer));
  }

  /** Times out the commands out for the command timeout and ticksPerTimeout of this watchdog's runs. */
  private readonly watch = () => {
    this.ticks += 1;
    const now = performance.now();
    for (const call of this.outstanding) {
      // In the order sent: once one is still in time, so are the rest.
      if (now - call.sentAt < this.commandTimeoutMs || this.ticks - call.tick < this.ticksPerTimeout) break;
      this.outstanding.delete(call);
      call.reject(new Error(`redis ${call.command} timed out after ${this.commandTimeoutMs} ms`));
    }
    if (this.outstanding.size === 0 && this.watchdog !== null) {
      clearInterval(this.watchdog);
      this.watchdog = null;
    }
  };

  /** Bun gives up after `maxRetries`; a later command asks again, so an outage never needs a restart. */
  private reconnect(): void {
    if (this.connecting || this.closed) return;
    this.connecting = this.client
      .connect()
      .catch((error: unknown) => {
        // Not thrown here: the commands waiting for this attempt fail with it in their message.
        this.lastConnectError = error instanceof Error ? error.message : String(error);
      })
      .finally(() => {
        this.connecting = null;
      });
  }
}
