/** One detail of a 400: which input and what is wrong with it. */
/** One problem of an error: the field it is about, and, where clients branch on it, a snake_case `code`. */
export type ErrorDetail = { field: string; message: string; code?: string };

/**
 * An error with a public status, code and message (docs/design.md §6). Anything thrown that is not an
 * ApiError is an internal fault: logged with the request id, answered as a bare 500.
 */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export const errors = {
  invalidRequest: (message: string, details?: ErrorDetail[]) => new ApiError(400, 'invalid_request', message, details),
  invalidCursor: () => new ApiError(400, 'invalid_cursor', 'The cursor is malformed, was tampered with, or was issued for different filters.'),
  unauthorized: (message = 'A valid API key is required in the X-API-Key header.') => new ApiError(401, 'unauthorized', message),
  forbidden: (code: string, message: string) => new ApiError(403, code, message),
  missingScope: (scope: string) =>
    new ApiError(403, 'insufficient_scope', `This operation requires the "${scope}" scope.`, [{ field: 'scope', message: scope }]),
  notFound: (message = 'The resource does not exist.') => new ApiError(404, 'not_found', message),
  conflict: (code: string, message: string) => new ApiError(409, code, message),
  tooManyRequests: (code: string, message: string, retryAfterSeconds: number) =>
    new ApiError(429, code, message, undefined, { 'retry-after': String(Math.max(1, Math.ceil(retryAfterSeconds))) }),
  unavailable: (code: string, message: string) => new ApiError(503, code, message),
};

export type ErrorBody = { error: { code: string; message: string; request_id: string; details?: ErrorDetail[] } };

export function errorBody(error: ApiError, requestId: string): ErrorBody {
  return {
    error: {
      code: error.code,
      message: error.message,
      request_id: requestId,
      ...(error.details && error.details.length > 0 ? { details: error.details } : {}),
    },
  };
}
