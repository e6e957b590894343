/** The Procfile (one process per entry, as deployed) and how `npm start` runs it on one machine. */
import fs from 'node:fs';
import path from 'node:path';

export interface ProcfileEntry {
  name: string;
  command: string;
}

export function parseProcfile(text: string): ProcfileEntry[] {
  const entries: ProcfileEntry[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line || line.startsWith('#')) continue;
    const m = /^([A-Za-z0-9_-]+):\s*(.+)$/.exec(line);
    if (!m || m[1] === undefined || m[2] === undefined) throw new Error(`Procfile: cannot parse line: ${raw}`);
    entries.push({ name: m[1], command: m[2] });
  }
  return entries;
}

export function readProcfile(root: string): ProcfileEntry[] {
  return parseProcfile(fs.readFileSync(path.join(root, 'Procfile'), 'utf8'));
}

/** The arguments of an entry that runs `bun <script> <arguments…>`, or null for any other command. */
export function argumentsOf(entry: ProcfileEntry, script: string): string[] | null {
  const prefix = `bun ${script} `;
  return entry.command.startsWith(prefix) ? entry.command.slice(prefix.length).trim().split(/\s+/) : null;
}

/**
 * Entries that run the same multi-purpose script (`bun workers/main.ts <pool…>`, `bun
 * test/fakes/main.ts <fake…>`) merged into one process named `name`, standing where the first of them
 * was; other entries keep their order. One process instead of several saves a runtime each (tens of
 * MB of RSS) and its idle timers. A single such entry is left as it is.
 */
export function mergeEntries(entries: ProcfileEntry[], script: string, name: string): ProcfileEntry[] {
  const names = entries.flatMap((entry) => argumentsOf(entry, script) ?? []);
  if (entries.filter((entry) => argumentsOf(entry, script)).length <= 1) return entries;
  const merged: ProcfileEntry[] = [];
  for (const entry of entries) {
    if (!argumentsOf(entry, script)) merged.push(entry);
    else if (!merged.some((existing) => existing.name === name)) merged.push({ name, command: `bun ${script} ${names.join(' ')}` });
  }
  return merged;
}

/**
 * The Procfile keeps one process per pool (scale-out); on one machine every pool fits in one worker
 * process (workers/main.ts takes several pools).
 */
export function mergeWorkerEntries(entries: ProcfileEntry[]): ProcfileEntry[] {
  return mergeEntries(entries, 'workers/main.ts', 'workers');
}
