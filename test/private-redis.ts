import net from 'node:net';
import type { Subprocess } from 'bun';
import { eventually } from './helpers.ts';

/**
 * A throwaway redis-server owned by one test file, so a suite can stop Redis without disturbing
 * the shared one every other suite uses. Ports come from the kernel (bind to port 0), never fixed.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (!address || typeof address === 'string') {
        server.close();
        reject(new Error('no port assigned'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/** Resolves true when a Redis server on `port` answers PING, false otherwise (never throws). */
export function redisAnswers(port: number, timeoutMs = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    let reply = '';
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), timeoutMs);
    socket.once('error', () => finish(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) finish(reply.startsWith('+PONG'));
    });
  });
}

export type PrivateRedis = {
  port: number;
  url: string;
  /** The running server (a new one after `restart`). */
  process: Subprocess;
  /** Kills the server (SIGKILL, like a crash) and waits until it has exited. Idempotent. */
  kill: () => Promise<void>;
  /** Starts a fresh, empty server on the same port once it has been killed (a Redis back from a crash). */
  restart: () => Promise<void>;
  /** SIGSTOP / SIGCONT: the server keeps its connections but answers nothing (a hung Redis), then carries on. */
  pause: () => void;
  resume: () => void;
};

async function spawnRedis(port: number): Promise<Subprocess> {
  const child = Bun.spawn(['redis-server', '--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdout: 'ignore',
    stderr: 'ignore',
  });
  try {
    await eventually(async () => {
      if (child.exitCode !== null) throw new Error(`redis-server exited early with code ${child.exitCode}`);
      return (await redisAnswers(port)) ? true : undefined;
    }, 10_000);
  } catch (error) {
    child.kill('SIGKILL');
    await child.exited;
    throw error;
  }
  return child;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const redis: PrivateRedis = {
    port,
    url: `redis://127.0.0.1:${port}`,
    process: await spawnRedis(port),
    kill: async () => {
      const child = redis.process;
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await child.exited;
    },
    restart: async () => {
      await redis.kill();
      redis.process = await spawnRedis(port);
    },
    pause: () => redis.process.kill('SIGSTOP'),
    resume: () => redis.process.kill('SIGCONT'),
  };
  return redis;
}
