import { createHash } from 'node:crypto';

/**
 * Bun's built-in Redis client, for the one-command-per-request counters of the request path (usage
 * metering and the keyless per-address limit). Measured under load on /v1/prices/{name}, ioredis
 * (through Node's net compatibility layer) cost ~125 µs of API CPU per request and this client
 * ~75 µs; GET /v2/me, metering here in batches (shared/usage/metering.ts), takes ~14 µs a request
 * less than metering on ioredis. ioredis stays for BullMQ and pub/sub, which need it. Fails fast like the request-path ioredis: no offline queue, a
 * command timeout, and a reconnect started in the background whenever a command finds the link down.
 */
export class CounterRedis {
  private readonly client: Bun.RedisClient;
  private connecting: Promise<void> | null = null;
  private readonly scripts = new Map<string, string>();

  constructor(
    url: string,
    private readonly commandTimeoutMs = 1_000,
  ) {
    this.client = new Bun.RedisClient(url, { enableOfflineQueue: false, connectionTimeout: 2_000, autoReconnect: true, maxRetries: 10 });
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
    this.client.close();
  }

  private send(command: string, args: string[]): Promise<unknown> {
    if (!this.client.connected) {
      this.reconnect();
      return Promise.reject(new Error('redis is not connected'));
    }
    let timer: Timer | undefined;
    return Promise.race([
      this.client.send(command, args),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`redis ${command} timed out after ${this.commandTimeoutMs} ms`)), this.commandTimeoutMs);
      }),
    ]).finally(() => clearTimeout(timer));
  }

  /** Bun gives up after `maxRetries`; a later command asks again, so an outage never needs a restart. */
  private reconnect(): void {
    if (this.connecting) return;
    this.connecting = this.client
      .connect()
      .catch(() => undefined)
      .finally(() => {
        this.connecting = null;
      });
  }
}
