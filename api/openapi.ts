import { toOpenAPISchema } from '@elysiajs/openapi';
import type { AnyElysia } from 'elysia';
import { z } from 'zod';
import { OPERATIONS, type Operation as TableOperation } from '../shared/http/operations.ts';

/**
 * The OpenAPI 3.1 document (docs/design.md §6), from the same zod schemas that validate requests. The
 * plugin's generator lays out paths and parameters; this module completes what it cannot know: the
 * JSON request body (our own body parser hides the content type from it), parameters as the client
 * sends them (a field with a default is optional), and every status a route can answer with the
 * shared error body.
 */

const OPENAPI_VERSION = '3.1.0';
const ERROR_SCHEMA_REF = '#/components/schemas/Error';

const errorBodySchema = z
  .object({
    error: z.object({
      code: z.string().describe('Machine-readable snake_case code'),
      message: z.string(),
      request_id: z.string().describe('Also sent as the X-Request-Id header'),
      details: z
        .array(
          z.object({
            field: z.string(),
            message: z.string(),
            code: z
              .string()
              .optional()
              .describe('Machine-readable snake_case code of this detail, where an operation documents one (e.g. `asset_protected` on trade intents)'),
          }),
        )
        .optional(),
    }),
  })
  .describe('The error body every endpoint shares');

const STATUS_TEXT: Record<number, string> = {
  400: 'Invalid request: a parameter, body field, cursor or id is malformed or out of range (details name the field)',
  401: 'Missing, invalid or revoked credentials',
  403: 'The key lacks a required scope, its workspace is suspended, or a signed URL is invalid',
  404: 'No such resource in this workspace',
  409: 'Conflict (an Idempotency-Key reused or in use, or a resource limit or state conflict)',
  410: 'Gone: the resource existed but its retention window has passed',
  412: 'The If-Match precondition failed',
  413: 'The request body is larger than 1 MiB',
  415: 'The request body is not JSON',
  428: 'A precondition header is required',
  429: 'Rate or concurrency limit reached; see Retry-After',
  503: 'A dependency (usage metering, database, upstream, or storage) is unavailable; retry shortly',
};

export type ResponsesObject = Record<string, { description: string; content?: Record<string, { schema: { $ref: string } | Record<string, unknown> }> }>;

/** A success answer: what it means, and the zod schema of its JSON body when it has one. */
export type SuccessResponse = string | { description: string; body: z.ZodType };

/** Error responses with the shared body, for `detail.responses` of a route or a plugin's macro. */
export function errorResponses(...statuses: number[]): ResponsesObject {
  return Object.fromEntries(
    statuses.map((status) => [
      String(status),
      { description: STATUS_TEXT[status] ?? 'Error', content: { 'application/json': { schema: { $ref: ERROR_SCHEMA_REF } } } },
    ]),
  );
}

/**
 * A route's own answers for `detail.responses`: success statuses without a response schema (201,
 * 204, 304) with what they mean, and the errors only that route gives (404, 409, …).
 */
export function routeResponses(success: Record<number, SuccessResponse>, ...errorStatuses: number[]): ResponsesObject {
  const documented: ResponsesObject = Object.fromEntries(
    Object.entries(success).map(([status, response]) => [
      status,
      typeof response === 'string'
        ? { description: response }
        : // Documented, not enforced at run time (that would cost every request a parse of its body):
          // test/http/openapi.test.ts checks real answers against these schemas instead.
          { description: response.description, content: { 'application/json': { schema: responseJsonSchema(response.body) } } },
    ]),
  );
  return { ...documented, ...errorResponses(...errorStatuses) };
}

/** JSON Schema of what the server sends. */
export function responseJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _dialect, ...jsonSchema } = z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', target: 'draft-2020-12' });
  return jsonSchema;
}

/** JSON Schema of what the client sends: defaults make a field optional, transforms show their input. */
export function requestJsonSchema(schema: z.ZodType): Record<string, unknown> {
  // The document declares the dialect once; `$schema` inside every embedded schema is noise.
  const { $schema: _dialect, ...jsonSchema } = z.toJSONSchema(schema, {
    io: 'input',
    unrepresentable: 'any',
    target: 'draft-2020-12',
    // Integer path parameters are checked as text (shared/http/validation.ts integerPathParam) and
    // documented as integers: the text's own keywords do not belong to the integer.
    override: ({ jsonSchema: node }) => {
      if (node.type !== 'integer') return;
      delete node.pattern;
      delete node.maxLength;
      delete node.minLength;
      // A text-checked integer's default is the text it stands for (`prefault('256')`): documented as the number.
      if (typeof node.default === 'string' && /^-?[0-9]+$/.test(node.default)) node.default = Number(node.default);
    },
  });
  return jsonSchema;
}

type RouteHooks = {
  body?: unknown;
  query?: unknown;
  params?: unknown;
  response?: unknown;
  detail?: { hide?: boolean; responses?: ResponsesObject; parameters?: { in: string; name: string }[] };
};
type Operation = {
  parameters?: unknown[];
  requestBody?: unknown;
  responses?: ResponsesObject;
  security?: Record<string, unknown>[];
  tags?: string[];
  description?: string;
  operationId?: string;
  [key: string]: unknown;
};

const isZod = (schema: unknown): schema is z.ZodType => typeof schema === 'object' && schema !== null && '_zod' in schema;

/** `/v2/things/:id` → `/v2/things/{id}`. */
export const openApiPath = (path: string) => path.replace(/:([^/]+)/g, '{$1}');

/** What the document's front matter says; `tags` describes each tag the routes use, in this order. */
export type OpenApiDocumentation = {
  info: Record<string, unknown>;
  tags: { name: string; description: string }[];
  components?: Record<string, unknown>;
};

const tableOperations = new Map<string, TableOperation>(OPERATIONS.map((entry) => [`${entry.method} ${entry.path}`, entry]));

/**
 * The access paragraph every operation's description ends with, from the operation table (the same
 * scopes and units the key check enforces and GET /v2/usage lists) and the route's security.
 */
function accessNote(entry: TableOperation | undefined, security: Record<string, unknown>[]): string {
  const key = security.some((scheme) => 'apiKey' in scheme);
  const session = security.some((scheme) => 'session' in scheme);
  if (key) {
    const scopes = entry && entry.scopes.length > 0 ? ` holding ${entry.scopes.map((scope) => `\`${scope}\``).join(', ')}` : ' (any scope)';
    const read = entry?.scopes.some((scope) => scope.endsWith(':read')) ? ' (the matching `:write` scope also grants it)' : '';
    const units = entry ? ` Metered: ${entry.units} unit${entry.units === 1 ? '' : 's'} per request (see Metering).` : '';
    return `**Access:** an API key${scopes}${read}${session ? ', or a signed-in session (Bearer token or `session` cookie)' : ''}.${units}`;
  }
  if (session) return '**Access:** a signed-in session (`Authorization: Bearer <token>` or the `session` cookie); API keys are not accepted. Not metered.';
  return '**Access:** no credentials. Not metered.';
}

export function buildOpenApiDocument(app: AnyElysia, documentation: OpenApiDocumentation) {
  const generated = toOpenAPISchema(app, undefined, undefined, { zod: requestJsonSchema }, OPENAPI_VERSION) as {
    paths: Record<string, Record<string, Operation>>;
    components: { schemas: Record<string, unknown> };
  };
  for (const route of app.routes as { method: string; path: string; hooks: RouteHooks }[]) {
    const operation = generated.paths[openApiPath(route.path)]?.[route.method.toLowerCase()];
    if (!operation) continue;
    const hooks = route.hooks;
    const body = isZod(hooks.body) ? hooks.body : undefined;
    if (body) {
      operation.requestBody = {
        required: !body.safeParse(undefined).success,
        content: { 'application/json': { schema: requestJsonSchema(body) } },
      };
    } else {
      delete operation.requestBody;
    }
    // Parameters a plugin declares in its detail (the Idempotency-Key header), which the generator
    // drops when the route has path or query parameters of its own.
    for (const parameter of hooks.detail?.parameters ?? []) {
      const parameters = (operation.parameters ??= []) as { in: string; name: string }[];
      if (!parameters.some((known) => known.in === parameter.in && known.name === parameter.name)) parameters.push(parameter);
    }
    // Success responses come from the route's response schemas (via the generator) or its detail;
    // every route answers a 400 when it has inputs, and bodies add their size and type checks.
    const success = Object.fromEntries(Object.entries(operation.responses ?? {}).filter(([status]) => status.startsWith('2') || status === '304'));
    const declared = hooks.detail?.responses ?? {};
    const inputErrors = [...(isZod(hooks.query) || isZod(hooks.params) || body ? [400] : []), ...(body ? [413, 415] : [])];
    const responses: ResponsesObject = { ...errorResponses(...inputErrors), ...declared, ...success };
    if (!Object.keys(responses).some((status) => status.startsWith('2'))) responses['200'] = { description: 'Success' };
    operation.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
    // A public operation says so (an empty requirement), rather than leaving its security unstated.
    operation.security ??= [];
    const entry = tableOperations.get(`${route.method} ${openApiPath(route.path)}`);
    // The operation table's id names it everywhere else too (usage counters, unit weights, capabilities).
    if (entry) operation.operationId = entry.id;
    const access = accessNote(entry, operation.security);
    operation.description = operation.description ? `${operation.description}\n\n${access}` : access;
  }
  const used = new Set(Object.values(generated.paths).flatMap((operations) => Object.values(operations).flatMap((operation) => operation.tags ?? [])));
  // Tags the front matter does not describe still appear (test/http/openapi.test.ts requires a description for each).
  const undescribed = [...used].filter((tag) => !documentation.tags.some((described) => described.name === tag)).map((name) => ({ name }));
  return {
    openapi: OPENAPI_VERSION,
    info: documentation.info,
    tags: [...documentation.tags.filter((tag) => used.has(tag.name)), ...undescribed],
    paths: generated.paths,
    components: {
      ...documentation.components,
      schemas: { ...generated.components.schemas, Error: requestJsonSchema(errorBodySchema) },
    },
  };
}
