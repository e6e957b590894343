import { OPERATIONS, type Dependency } from './operations.ts';

export type Capability = {
  operation: string;
  method: string;
  path: string;
  status: 'production' | 'unavailable' | 'planned';
  auth: 'public' | 'api_key' | 'session';
  scopes: string[];
  units: number;
  unavailable_because?: Dependency[];
};

/**
 * spec 3 "Feature (capabilities)": not yet built → planned; built but a runtime dependency is
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
