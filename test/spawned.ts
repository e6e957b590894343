import { join } from 'node:path';
import { eventually } from './helpers.ts';

/**
 * Real processes of the project (`bun <script>`) for end-to-end suites: started from the repository
 * root with the test environment plus `env`, logging warnings only, and stopped together.
 */
export function spawnedProcesses() {
  const root = join(import.meta.dir, '..');
  const processes: ReturnType<typeof Bun.spawn>[] = [];
  return {
    spawn(args: string[], env: Record<string, string>) {
      const child = Bun.spawn(['bun', ...args], { cwd: root, env: { ...process.env, LOG_LEVEL: 'warn', ...env }, stdout: 'ignore', stderr: 'inherit' });
      processes.push(child);
      return child;
    },
    /** SIGTERM to every process, SIGKILL to any still running 15 s later. */
    async stopAll() {
      for (const child of processes) child.kill('SIGTERM');
      await Promise.all(processes.map((child) => Promise.race([child.exited, Bun.sleep(15_000).then(() => child.kill('SIGKILL'))])));
    },
  };
}

/** Resolves once `url` answers at all (any status), within 30 s. */
export async function waitForHttp(url: string): Promise<void> {
  await eventually(
    async () => {
      try {
        await fetch(url, { signal: AbortSignal.timeout(1_000) });
        return true;
      } catch {
        return undefined;
      }
    },
    30_000,
    100,
  );
}
