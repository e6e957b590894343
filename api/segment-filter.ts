import { z } from 'zod';
import { errors } from '../shared/http/errors.ts';
import { text } from '../shared/http/validation.ts';
import { FIXED_SEGMENT_VALUES, SEGMENTS, type SegmentFilter } from '../shared/market/segments.ts';
import { SOURCE_NAMES } from '../shared/platform/source-names.ts';
import type { AppDeps } from './deps.ts';
import { weaponNameCheck } from './weapon-names.ts';

const allowedSources = SOURCE_NAMES.join(', ');

/** `marketplace`: one of the known sources; a missing or unknown one is a 400 naming them (price history, market index, summary). */
export const marketplaceField = z.enum(SOURCE_NAMES, {
  error: (issue) =>
    issue.input === undefined ? `required; one of ${allowedSources}` : `unknown marketplace ${JSON.stringify(issue.input)}; one of ${allowedSources}`,
});

/** Query fields of a segment filter (market index and market summary). */
export const segmentQueryFields = {
  segment: z
    .enum(SEGMENTS, {
      error: (issue) => `unknown segment ${JSON.stringify(issue.input)}; one of ${SEGMENTS.join(', ')}`,
    })
    .optional(),
  value: text({ min: 1, max: 80 }).optional().describe('Exact value of the segment attribute, e.g. segment=weapon&value=AK-47; required with segment'),
};

/**
 * Resolves `segment` + `value` to a filter: value is required with segment and meaningless without
 * it, and must be one of the segment's values (exact, case-sensitive), else 400 naming the field.
 */
export function segmentFilterParser(deps: Pick<AppDeps, 'sql'>) {
  const checkWeapon = weaponNameCheck(deps);
  return async function parseSegmentFilter(query: { segment?: (typeof SEGMENTS)[number]; value?: string }): Promise<SegmentFilter> {
    if (query.segment === undefined) {
      if (query.value !== undefined)
        throw errors.invalidRequest('`value` needs a `segment`.', [{ field: 'query.value', message: 'only allowed with segment' }]);
      return null;
    }
    if (query.value === undefined) {
      throw errors.invalidRequest('`value` is required with `segment`.', [{ field: 'query.value', message: `required with segment=${query.segment}` }]);
    }
    if (query.segment === 'weapon') await checkWeapon(query.value, 'query.value');
    else if (!FIXED_SEGMENT_VALUES[query.segment].includes(query.value)) {
      throw errors.invalidRequest(`Unknown ${query.segment} ${JSON.stringify(query.value)}.`, [
        { field: 'query.value', message: `expected one of ${FIXED_SEGMENT_VALUES[query.segment].join(', ')}` },
      ]);
    }
    return { segment: query.segment, value: query.value };
  };
}
