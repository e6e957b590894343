import type { BullBoardRequest } from '@bull-board/api/typings/app';
import { z } from 'zod';
import { type ErrorDetail, errors } from '../../../shared/http/errors.ts';
import { text } from '../../../shared/http/validation.ts';
import { JOBS, type JobName, type JobPayload, POOLS, type Pool, parseJobPayload } from '../../../shared/jobs/queues.ts';

/**
 * Edge checks of the dashboard's API requests (issue 10: hostile input is a 400 naming the field,
 * never a 500). bull-board's handlers trust what they get: a missing body is a TypeError, a page
 * size of 1e9 asks Redis for a billion jobs, an unknown clean status is BullMQ's error. And a job
 * added from the dashboard goes through the job registry like any other (shared/jobs/queues.ts): a job
 * of that pool, its payload schema, its default options.
 */

// bull-board's job statuses for BullMQ ('latest' is its "all of them") and the ones `clean` takes.
const STATUSES = ['latest', 'active', 'waiting', 'waiting-children', 'prioritized', 'completed', 'failed', 'delayed', 'paused'] as const;
const CLEAN_STATUSES = ['completed', 'wait', 'active', 'delayed', 'failed'] as const;
const RETRY_STATUSES = ['completed', 'failed'] as const;

const count = (max: number) => z.coerce.number<string>().int().min(1).max(max);
const jobId = text({ min: 1, max: 200 }).refine((value) => !value.includes(':'), 'must not contain ":" (BullMQ reserves it)');

const queuesQuery = z.object({
  activeQueue: text({ max: 256 }).optional(),
  status: z.enum(STATUSES).optional(),
  page: count(1_000_000).optional(),
  jobsPerPage: count(1_000).optional(),
});

const addJobBody = z
  .object({
    name: z.string(),
    data: z.unknown(),
    // The few options an operator plausibly sets by hand; the job's registry options cover the rest.
    options: z
      .object({
        delay: z
          .number()
          .int()
          .min(0)
          .max(30 * 86_400_000)
          .optional(),
        jobId: jobId.optional(),
      })
      .strict()
      .optional(),
  })
  .strict();

const BODIES: Record<string, z.ZodType> = {
  '/api/queues/:queueName/:jobId/update-data': z.object({ jobData: z.record(z.string(), z.unknown()) }),
  '/api/queues/:queueName/concurrency': z.object({ concurrency: z.number().int().min(0).max(10_000) }),
};

const PARAMS: Record<string, z.ZodType> = {
  '/api/queues/:queueName/clean/:queueStatus': z.object({ queueStatus: z.enum(CLEAN_STATUSES) }),
  '/api/queues/:queueName/retry/:queueStatus': z.object({ queueStatus: z.enum(RETRY_STATUSES) }),
};

function parsed<T>(schema: z.ZodType<T>, value: unknown, on: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const details: ErrorDetail[] = result.error.issues.map((issue) => ({ field: [on, ...issue.path].join('.'), message: issue.message }));
  throw errors.invalidRequest('The request is invalid.', details);
}

/** Throws a 400 for a request `route` (the adapter's route, e.g. `/api/queues`) must not get; adjusts an added job. */
export function checkDashboardRequest(route: string, request: BullBoardRequest): void {
  if (route === '/api/queues') parsed(queuesQuery, request.query, 'query');
  const params = PARAMS[route];
  if (params) parsed(params, request.params, 'params');
  const body = BODIES[route];
  if (body) parsed(body, request.body, 'body');
  if (route === '/api/queues/:queueName/add') {
    const { name, data, options } = parsed(addJobBody, request.body, 'body');
    const pool = request.params.queueName as Pool;
    if (!(POOLS as readonly string[]).includes(pool) || !Object.hasOwn(JOBS, name) || JOBS[name as JobName].queue !== pool) {
      throw errors.invalidRequest('The job is not one of this queue.', [{ field: 'body.name', message: `one of the ${pool} pool's jobs` }]);
    }
    let payload: JobPayload<JobName>;
    try {
      payload = parseJobPayload(name as JobName, data);
    } catch (error) {
      if (!(error instanceof z.ZodError)) throw error;
      throw errors.invalidRequest(
        'The job payload is invalid.',
        error.issues.map((issue) => ({ field: ['body', 'data', ...issue.path].join('.'), message: issue.message })),
      );
    }
    request.body = { name, data: payload, options: { ...JOBS[name as JobName].options, ...options } };
  }
}
