import { expect, test } from 'bun:test';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { computeKitCatalogIds } from '../../shared/catalog/kit-catalog.ts';
import { computeFadeSkins } from '../../shared/inspect/insights.ts';

// The committed lookup tables (scripts/lookups-generate.ts) are exactly what the libraries give today:
// after an upgrade of @ianlucas/cs2-lib or csgo-fade-percentage-calculator, run `npm run lookups:generate`.
const read = (path: string) => JSON.parse(readFileSync(join(import.meta.dir, '..', '..', path), 'utf8')) as unknown;

test('shared/inspect/fade-skins.json is what the libraries give (npm run lookups:generate)', () => {
  const rows = computeFadeSkins();
  expect(rows.length).toBeGreaterThan(20);
  expect(read('shared/inspect/fade-skins.json')).toEqual(rows);
});

test('shared/catalog/kit-catalog-ids.json is what the library gives (npm run lookups:generate)', () => {
  const names = computeKitCatalogIds();
  expect(names.stickers.length).toBeGreaterThan(5_000);
  expect(names.charms.length).toBeGreaterThan(10);
  expect(read('shared/catalog/kit-catalog-ids.json')).toEqual(names);
});
