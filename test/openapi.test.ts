import { afterAll, beforeAll, describe, expect, test } from 'bun:test';
import { compileErrors, validate } from '@readme/openapi-parser';
import { z } from 'zod';
import { openApiPath, requestJsonSchema } from '../api/openapi.ts';
import { createTestApp, type TestApp } from './helpers.ts';

/**
 * Issue 10, item 6: /openapi.json is a valid OpenAPI 3.1 document (checked by an independent
 * validator) and tells the truth about every route: its real parameters (a parameter with a
 * default is optional and shows the default), its JSON body, and its error answers.
 */

type Parameter = { name: string; in: string; required?: boolean; schema: { default?: unknown } };
type Operation = {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: { properties?: Record<string, unknown> } }> };
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
};
type Document = { openapi: string; paths: Record<string, Record<string, Operation>>; components: { schemas: Record<string, unknown> } };
type Route = { method: string; path: string; hooks: { body?: unknown; query?: unknown; params?: unknown; detail?: { hide?: boolean } } };

const isZod = (schema: unknown): schema is z.ZodObject => typeof schema === 'object' && schema !== null && '_zod' in schema;
const keysOf = (schema: unknown) => (isZod(schema) && 'shape' in schema ? Object.keys(schema.shape).sort() : []);

describe('GET /openapi.json', () => {
  let t: TestApp;
  let document: Document;
  let routes: Route[];

  beforeAll(async () => {
    t = createTestApp();
    const response = await t.request('/openapi.json');
    expect(response.status).toBe(200);
    document = (await response.json()) as Document;
    routes = (t.app.routes as Route[]).filter((route) => !route.hooks.detail?.hide);
  });

  afterAll(async () => {
    await t.close();
  });

  test('is valid OpenAPI 3.1 by an independent validator', async () => {
    expect(document.openapi.startsWith('3.1')).toBe(true);
    const result = await validate(structuredClone(document) as never);
    if (!result.valid) throw new Error(compileErrors(result));
    expect(result.valid).toBe(true);
  });

  test('documents every route of the app, and nothing else', () => {
    const documented = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`));
    const served = routes.map((route) => `${route.method} ${openApiPath(route.path)}`);
    expect(documented.sort()).toEqual(served.sort());
  });

  test('each route: its real path and query parameters, optional when they have a default', () => {
    for (const route of routes) {
      const operation = document.paths[openApiPath(route.path)]![route.method.toLowerCase()]!;
      const parameters = operation.parameters ?? [];
      const named = (place: string) => parameters.filter((p) => p.in === place).map((p) => p.name).sort();
      expect({ route: route.path, path: named('path') }).toEqual({ route: route.path, path: keysOf(route.hooks.params) });
      expect({ route: route.path, query: named('query') }).toEqual({ route: route.path, query: keysOf(route.hooks.query) });
      for (const parameter of parameters.filter((p) => p.in === 'query')) {
        const field = (route.hooks.query as z.ZodObject).shape[parameter.name] as z.ZodType;
        // Optional exactly when the schema accepts the parameter's absence.
        const optional = field.safeParse(undefined).success;
        expect({ route: route.path, name: parameter.name, required: parameter.required }).toEqual({ route: route.path, name: parameter.name, required: !optional });
        const absent = field.safeParse(undefined);
        if (absent.success && absent.data !== undefined) {
          expect({ route: route.path, name: parameter.name, default: parameter.schema.default }).toMatchObject({ default: expect.anything() });
        }
      }
    }
  });

  test('each route with a body documents it as JSON, from the schema that validates it', () => {
    const withBodies = routes.filter((route) => isZod(route.hooks.body));
    expect(withBodies.length).toBeGreaterThanOrEqual(5);
    for (const route of routes) {
      const operation = document.paths[openApiPath(route.path)]![route.method.toLowerCase()]!;
      if (!isZod(route.hooks.body)) {
        expect({ route: route.path, body: operation.requestBody }).toEqual({ route: route.path, body: undefined });
        continue;
      }
      expect(Object.keys(operation.requestBody!.content)).toEqual(['application/json']);
      expect(operation.requestBody!.content['application/json']!.schema).toEqual(requestJsonSchema(route.hooks.body) as never);
    }
  });

  test('error answers are listed with the shared error body: 400 for inputs, 401/403/429/503 for keyed routes, 413/415 for bodies', () => {
    expect(document.components.schemas.Error).toBeDefined();
    for (const route of routes) {
      const operation = document.paths[openApiPath(route.path)]![route.method.toLowerCase()]!;
      const statuses = Object.keys(operation.responses);
      expect(statuses.some((status) => status.startsWith('2'))).toBe(true);
      const expected = [
        ...(isZod(route.hooks.query) || isZod(route.hooks.params) || isZod(route.hooks.body) ? ['400'] : []),
        ...(isZod(route.hooks.body) ? ['413', '415'] : []),
      ];
      const security = (operation as { security?: Record<string, unknown>[] }).security ?? [];
      if (security.some((entry) => 'apiKey' in entry)) expected.push('401', '403', '429', '503');
      if (security.some((entry) => 'session' in entry)) expected.push('401');
      for (const status of expected) expect({ route: `${route.method} ${route.path}`, status, listed: statuses.includes(status) }).toEqual({ route: `${route.method} ${route.path}`, status, listed: true });
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) >= 400) expect(response.content?.['application/json']?.schema.$ref).toBe('#/components/schemas/Error');
      }
    }
  });

  test('a date-time parameter is documented as such', () => {
    const history = document.paths['/v2/prices/{catalog_id}/history']!.get!;
    const from = history.parameters!.find((p) => p.name === 'from')!;
    expect(from.schema).toMatchObject({ type: 'string', format: 'date-time' });
    expect(from.required).toBe(false);
  });
});
