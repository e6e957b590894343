import type { SourceName } from '../platform/source-names.ts';
import { type FetchContext, type SourceFetchResult, type SourceObservation, SourceUnavailableError } from './types.ts';
import { getJson, postJson, type UpstreamRequest } from './upstream.ts';

/**
 * The one-request marketplaces (skinport, lisskins, whitemarket, bitskins, csdeals, skinbaron): one
 * request answers the whole market, its body is checked for the array of rows, and each row becomes an
 * observation, nothing (`unpriced`: nothing for sale) or a malformed row, counted and never fatal.
 * Each marketplace keeps only its request (URL from `context.baseUrl`, i.e. SOURCE_<NAME>_URL), where
 * its body keeps the rows, and its row parser; the budget, timeout and error handling are getJson's.
 */

/** What one row of the body becomes. */
export type WholeMarketRow = SourceObservation | 'malformed' | 'unpriced';

export type WholeMarketFetch = Omit<UpstreamRequest, 'context'> & {
  /** A JSON body to POST (skinbaron); without one the request is a GET. */
  json?: unknown;
  /** The rows of the parsed body; throws SourceUnavailableError when the body is not the expected shape. */
  rows: (body: unknown) => readonly unknown[];
  parseRow: (row: unknown, now: Date) => WholeMarketRow;
};

/** One request (one unit of the budget), its body's rows, each parsed; see resultFromRows for the counting. */
export async function fetchWholeMarket(context: FetchContext, spec: WholeMarketFetch): Promise<SourceFetchResult> {
  const { json, rows: rowsOf, parseRow, ...request } = spec;
  const { body } = json === undefined ? await getJson({ ...request, context }) : await postJson({ ...request, context, json });
  return resultFromRows(spec.source, context, rowsOf(body), parseRow);
}

/** `rows` for a body that is a bare array of rows. */
export function bareArray(source: SourceName): (body: unknown) => readonly unknown[] {
  return (body) => {
    if (!Array.isArray(body)) throw new SourceUnavailableError(source, 'unexpected body: not an array of items');
    return body;
  };
}

/**
 * A one-request source's result from its rows: each row through `parse` (`unpriced`: nothing for sale,
 * not malformed), malformed rows counted, never fatal, and logged once per run.
 */
function resultFromRows(
  source: SourceName,
  context: FetchContext,
  rows: readonly unknown[],
  parse: (row: unknown, now: Date) => WholeMarketRow,
): SourceFetchResult {
  const now = context.now();
  const observations: SourceObservation[] = [];
  let skipped = 0;
  for (const row of rows) {
    const outcome = parse(row, now);
    if (outcome === 'malformed') skipped += 1;
    else if (outcome !== 'unpriced') observations.push(outcome);
  }
  if (skipped > 0) context.log.warn({ source, skipped, rows: rows.length }, 'skipped malformed rows');
  return { observations, skipped, unknown: 0, requests: 1 };
}
