import { z } from 'zod';
import { DEPENDENCIES, type Dependency, OPERATIONS } from './operations.ts';

export const capabilitySchema = z.object({
  operation: z.string().describe('Operation id, as in usage counters and unit weights'),
  method: z.string(),
  path: z.string(),
  status: z.enum(['production', 'unavailable', 'planned']),
  auth: z.enum(['public', 'api_key', 'session']),
  scopes: z.array(z.string()).describe('Scopes a key needs for it'),
  units: z.number().int().describe('Usage units debited per request'),
  unavailable_because: z.array(z.enum(DEPENDENCIES)).optional().describe('Only when unavailable: the missing runtime dependencies'),
});
export type Capability = z.infer<typeof capabilitySchema>;

/**
 * docs/interface.md §3 "Feature (capabilities)": not yet built → planned; built but a runtime dependency is
 * missing → unavailable (naming it); otherwise production.
 */
export function capabilities(dependencyAvailable: (dependency: Dependency) => boolean): Capability[] {
  return OPERATIONS.map((operation) => {
    const missing = operation.dependsOn.filter((dependency) => !dependencyAvailable(dependency));
    const status = operation.built === 'planned' ? 'planned' : missing.length > 0 ? 'unavailable' : 'production';
    return {
      operation: operation.id,
      method: operation.method,
      path: operation.path,
      status,
      auth: operation.auth,
      scopes: [...operation.scopes],
      units: operation.units,
      ...(status === 'unavailable' ? { unavailable_because: missing } : {}),
    };
  });
}
