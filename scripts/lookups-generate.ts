/**
 * Writes the lookup tables derived from @ianlucas/cs2-lib's English names, so no running process has
 * to load those names (~0.1 s, ~20 MB) to value an inventory or compute its insights:
 *   shared/inspect/fade-skins.json      Fade / Amber Fade / Acid Fade skins csgo-fade-percentage-calculator covers
 *   shared/catalog/kit-catalog-ids.json  sticker kit and charm ids → catalog ids
 * Run after upgrading either package (`npm run lookups:generate`); test/catalog/generated-lookups.test.ts
 * fails while the files are out of date.
 */
import { join } from 'node:path';
import { computeKitCatalogIds } from '../shared/catalog/kit-catalog.ts';
import { computeFadeSkins } from '../shared/inspect/insights.ts';

const root = join(import.meta.dir, '..');
await Bun.write(join(root, 'shared/inspect/fade-skins.json'), `${JSON.stringify(computeFadeSkins())}\n`);
await Bun.write(join(root, 'shared/catalog/kit-catalog-ids.json'), `${JSON.stringify(computeKitCatalogIds())}\n`);
console.log('wrote shared/inspect/fade-skins.json and shared/catalog/kit-catalog-ids.json');
