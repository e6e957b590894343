// `npm run item-files:generate`: write the docs/design.md §10 stand-in item files under ITEM_FILES_DIR
// (default .data/item-files), keeping every file already there (real game files win). Needs no
// services, so it runs with plain bun.

import { generateItemFiles } from '../shared/media/generate-item-files.ts';
import { itemFilePaths } from '../shared/media/item-files.ts';
import { loadConfigOrExit } from '../shared/platform/config.ts';
import { createLogger } from '../shared/platform/logger.ts';

const config = loadConfigOrExit();
const log = createLogger({ level: config.LOG_LEVEL, name: 'item-files', format: config.LOG_FORMAT });
const report = await generateItemFiles(config.ITEM_FILES_DIR);
// Strings, not objects per kind: short to read in the npm start output.
const summary = (['model', 'paint', 'sticker', 'charm'] as const).map((kind) => `${kind}s=${report[kind].written}+${report[kind].skipped} kept`).join(' ');
log.info({ dir: itemFilePaths(config.ITEM_FILES_DIR).root, ms: report.ms }, `item files generated: ${summary}`);
