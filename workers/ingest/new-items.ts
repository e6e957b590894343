import { recordUnknownNames } from '../../shared/catalog/provisional.ts';
import type { Sql } from '../../shared/platform/db.ts';
import type { Logger } from '../../shared/platform/logger.ts';

/**
 * docs/design.md §19, after an ingest run has written its prices: the names it could not map are recorded for
 * its source, and those now seen on two sources (or on steam) become provisional catalog items.
 * Returns true when the catalog changed under this process's name map (an item added here or by
 * another process or catalog sync), so the caller reloads the map and the next run prices the item.
 * A failure here costs the run nothing it has written: it is logged and the names are recorded again
 * by the next run that sees them.
 */
export async function learnNewItems(sql: Sql, input: { source: string; names: readonly string[]; at: Date; log: Logger }): Promise<boolean> {
  if (input.names.length === 0) return false;
  try {
    const outcome = await recordUnknownNames(sql, { source: input.source, names: input.names, at: input.at });
    if (outcome.added.length > 0) {
      input.log.info(
        { added: outcome.added.map((item) => item.market_hash_name), catalog_ids: outcome.added.map((item) => item.catalog_id) },
        'new market items added to the catalog (provisional)',
      );
    }
    // Once per name (it stays counted in /metrics and listed in GET /v2/status).
    if (outcome.newlyUnparsed.length > 0) {
      input.log.warn(
        { unparsed: outcome.newlyUnparsed.slice(0, 20), count: outcome.newlyUnparsed.length },
        'market names seen on two sources (or steam) that do not parse into one item: not priced',
      );
    }
    return outcome.catalogChanged;
  } catch (error) {
    input.log.warn({ err: (error as Error).message }, 'could not record the names the catalog lacks; the next run will');
    return false;
  }
}
