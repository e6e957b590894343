import { describe, expect, test } from 'bun:test';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

/**
 * Issue 34 (docs/design.md §21): the project carries its own contract. Every code comment, SQL
 * comment, README or docs line that cites the contract points at a file in this repository:
 * docs/interface.md (the interface), docs/design.md (the decisions, §1–§21) or docs/conventions.md
 * (the habits). Nothing cites the old outside documents (`DESIGN 19`, `DESIGN.md`, `STYLE: …`,
 * `spec 4`, `service-interface.md`, a `../shared/` path leaving the repository), and every section a
 * citation names exists. No database: this reads the tracked files only.
 */
const root = resolve(import.meta.dir, '..', '..');
const SELF = 'test/repo/contract-citations.test.ts';

/** Files whose `spec <n>` is another specification's section, not the interface's. */
const OTHER_SPECS: Record<string, string> = {
  'shared/gameplatform/openid.ts': 'OpenID Authentication 2.0',
};

type Source = { path: string; text: string };

/** Every tracked text file (git ls-files) that is still in the working tree, minus this test. */
function trackedSources(): Source[] {
  const listed = Bun.spawnSync(['git', 'ls-files', '-z'], { cwd: root });
  if (listed.exitCode !== 0) throw new Error(`git ls-files failed: ${listed.stderr.toString()}`);
  const sources: Source[] = [];
  for (const path of listed.stdout.toString().split('\0')) {
    if (!path || path === SELF || path === 'package-lock.json' || path.startsWith('node_modules/')) continue;
    const full = join(root, path);
    if (!existsSync(full) || !statSync(full).isFile() || statSync(full).size > 4 * 1024 * 1024) continue;
    const bytes = readFileSync(full);
    if (bytes.includes(0)) continue; // binary
    sources.push({ path, text: bytes.toString('utf8') });
  }
  return sources;
}

const sources = trackedSources();

function lineOf(text: string, index: number): number {
  let line = 1;
  for (let i = 0; i < index; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

function lineText(text: string, index: number): string {
  const start = text.lastIndexOf('\n', index - 1) + 1;
  const end = text.indexOf('\n', index);
  return text.slice(start, end === -1 ? undefined : end).trim();
}

function where(source: Source, index: number): string {
  return `${source.path}:${lineOf(source.text, index)}: ${lineText(source.text, index)}`;
}

/** Whether a `../shared/…` path written in `file` names something inside the repository. */
function resolvesInside(file: string, written: string): boolean {
  const target = resolve(root, dirname(file), written);
  const inside = relative(root, target);
  if (inside.startsWith('..') || inside.startsWith(sep)) return false;
  return ['', '.ts', '.js', '/index.ts'].some((suffix) => existsSync(target.replace(/\/$/, '') + suffix));
}

/** Headings `## 12. Title` (design.md) or `## 4. …` / `### 2.4 …` (interface.md) → their numbers. */
function sectionNumbers(path: string): Set<string> {
  const text = readFileSync(join(root, path), 'utf8');
  return new Set([...text.matchAll(/^#{2,3} (\d+(?:\.\d+)*)\.? /gm)].map((match) => match[1]!));
}

/** `§19`, `§9/§10`, `§9, §13 and §14`, `§17–§21` after a doc's name, across a comment line break. */
function citedSections(docName: string): { source: Source; index: number; section: string }[] {
  const pattern = new RegExp(
    `${docName.replace('.', '\\.')}(?:'s)?(?:[ \\t]|\\n[ \\t]*(?:\\*|//|#|--)?[ \\t]*)(§\\d+(?:\\.\\d+)*(?:(?:, and |, | and |/| / |–)§\\d+(?:\\.\\d+)*)*)`,
    'g',
  );
  const found: { source: Source; index: number; section: string }[] = [];
  for (const source of sources) {
    for (const match of source.text.matchAll(pattern)) {
      for (const section of match[1]!.matchAll(/§(\d+(?:\.\d+)*)/g)) found.push({ source, index: match.index!, section: section[1]! });
    }
  }
  return found;
}

describe('the contract lives in the repository (issue 34)', () => {
  test('docs/interface.md, docs/design.md and docs/conventions.md exist, design.md with sections 1 to 21 in order', () => {
    for (const doc of ['docs/interface.md', 'docs/design.md', 'docs/conventions.md']) expect(existsSync(join(root, doc))).toBe(true);
    const design = readFileSync(join(root, 'docs/design.md'), 'utf8');
    const numbers = [...design.matchAll(/^## (\d+)\. /gm)].map((match) => Number(match[1]));
    expect(numbers).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
  });

  test('no line cites DESIGN, STYLE, the spec by number, service-interface or ../shared/ outside the repository', () => {
    const offenders: string[] = [];
    for (const source of sources) {
      const { text, path } = source;
      // `DESIGN 19`, `(DESIGN 13)`, `DESIGN 9/10`, `DESIGN.md`, `DESIGN's`: the old outside document.
      for (const match of text.matchAll(/\bDESIGN\b/g)) offenders.push(where(source, match.index!));
      // `STYLE: …`, `STYLE "…"`, `STYLE.md`.
      for (const match of text.matchAll(/\bSTYLE\b/g)) offenders.push(where(source, match.index!));
      for (const match of text.matchAll(/service-interface|\/work\/shared\b/g)) offenders.push(where(source, match.index!));
      // `spec 4`, `spec 2.3 / 3 / 8`, `spec 8's`: the interface's sections are docs/interface.md §N.
      if (!(path in OTHER_SPECS)) {
        for (const match of text.matchAll(/(?<![-\w.@/])spec(?:'s)? \d/g)) offenders.push(where(source, match.index!));
      }
      // `../shared/…`: fine as a path to the project's own shared/ (imports); a doc path leaving the
      // repository (../shared/DESIGN.md, ../shared/spec/…) is not.
      for (const match of text.matchAll(/(?:\.\.\/)+shared\/[\w./-]*/g)) {
        if (!resolvesInside(path, match[0])) offenders.push(where(source, match.index!));
      }
    }
    expect([...new Set(offenders)]).toEqual([]);
  });

  test('every docs/design.md §N names a section of docs/design.md', () => {
    const sections = sectionNumbers('docs/design.md');
    const missing = citedSections('design.md')
      .filter(({ section }) => !sections.has(section))
      .map(({ source, index, section }) => `§${section} in ${where(source, index)}`);
    expect(missing).toEqual([]);
  });

  test('every docs/interface.md §N names a section of docs/interface.md', () => {
    const sections = sectionNumbers('docs/interface.md');
    const missing = citedSections('interface.md')
      .filter(({ section }) => !sections.has(section))
      .map(({ source, index, section }) => `§${section} in ${where(source, index)}`);
    expect(missing).toEqual([]);
  });

  test('every docs/conventions.md "<heading>" names a heading of docs/conventions.md', () => {
    const text = readFileSync(join(root, 'docs/conventions.md'), 'utf8');
    const headings = new Set([...text.matchAll(/^## (.+)$/gm)].map((match) => match[1]!.trim().toLowerCase()));
    const missing: string[] = [];
    for (const source of sources) {
      for (const match of source.text.matchAll(/docs\/conventions\.md "([^"<\n]+)"/g)) {
        if (!headings.has(match[1]!.trim().toLowerCase())) missing.push(`"${match[1]}" in ${where(source, match.index!)}`);
      }
    }
    expect(missing).toEqual([]);
  });
});
