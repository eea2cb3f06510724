// Errors: API failures carry the daemon's stable code.

import type { ErrorCode } from "./schema.js";

/** Every error this package throws. */
export class VfsdError extends Error {
  override name = "VfsdError";
}

/**
 * The daemon refused a request: `code` is the stable error code (the
 * description's `ErrorCode`: `not_found`, `forbidden`, ...), `message` what
 * was wrong and what to do, `status` the HTTP status it came with. Catch a
 * subclass (`NotFoundError`, ...) or branch on `code`.
 */
export class APIError extends VfsdError {
  override name = "APIError";
  constructor(
    readonly code: ErrorCode | (string & {}),
    message: string,
    readonly status: number,
  ) {
    super(`${code}: ${message}`);
    this.apiMessage = message;
  }
  /** The daemon's message, without the code. */
  readonly apiMessage: string;
}

export class NotFoundError extends APIError { override name = "NotFoundError"; }
export class AlreadyExistsError extends APIError { override name = "AlreadyExistsError"; }
export class ConflictError extends APIError { override name = "ConflictError"; }
export class InvalidInputError extends APIError { override name = "InvalidInputError"; }
export class InvalidPathError extends APIError { override name = "InvalidPathError"; }
export class InvalidPatternError extends APIError { override name = "InvalidPatternError"; }
export class TooLargeError extends APIError { override name = "TooLargeError"; }
export class ForbiddenError extends APIError { override name = "ForbiddenError"; }
export class UnauthorizedError extends APIError { override name = "UnauthorizedError"; }
export class LimitExceededError extends APIError { override name = "LimitExceededError"; }
export class MethodNotAllowedError extends APIError { override name = "MethodNotAllowedError"; }
/** Code `fenced`: the session belongs to another daemon of the fleet now; the message names it. */
export class FencedError extends APIError { override name = "FencedError"; }
export class UnavailableError extends APIError { override name = "UnavailableError"; }
/** Code `error`: anything else; the message says what failed. */
export class InternalError extends APIError { override name = "InternalError"; }

const byCode: Record<ErrorCode, new (code: string, message: string, status: number) => APIError> = {
  not_found: NotFoundError,
  already_exists: AlreadyExistsError,
  conflict: ConflictError,
  invalid_input: InvalidInputError,
  invalid_path: InvalidPathError,
  invalid_pattern: InvalidPatternError,
  too_large: TooLargeError,
  forbidden: ForbiddenError,
  unauthorized: UnauthorizedError,
  limit_exceeded: LimitExceededError,
  method_not_allowed: MethodNotAllowedError,
  fenced: FencedError,
  unavailable: UnavailableError,
  error: InternalError,
};

// The code of an answer whose body is not the error envelope (the MCP
// endpoint's plain-text 405), by its status.
const byStatus: Record<number, ErrorCode> = {
  400: "invalid_input", 401: "unauthorized", 403: "forbidden", 404: "not_found",
  405: "method_not_allowed", 409: "conflict", 413: "too_large", 503: "unavailable",
};

/** The error for a code: its class, or APIError for a code this package does not know (a newer daemon's). */
export function errorFor(code: string, message: string, status = 0): APIError {
  const C = (byCode as Record<string, new (c: string, m: string, s: number) => APIError>)[code] ?? APIError;
  return new C(code, message, status);
}

/** The error for a non-2xx answer. */
export function errorFromResponse(status: number, body: Buffer, what: string): APIError {
  try {
    const env = JSON.parse(body.toString("utf8")) as { error?: { code?: unknown; message?: unknown } };
    if (env && env.error && typeof env.error.code === "string") {
      return errorFor(env.error.code, String(env.error.message ?? ""), status);
    }
  } catch {
    // not the envelope
  }
  const text = body.toString("utf8").trim().slice(0, 2000);
  return errorFor(byStatus[status] ?? "error", `${what}: HTTP ${status}: ${text}`, status);
}

/** The daemon could not be reached at all (no socket, nothing listening, the connection dropped). */
export class UnreachableError extends VfsdError {
  override name = "UnreachableError";
  constructor(readonly where: string, override readonly cause: unknown) {
    super(`cannot reach vfsd at ${where}: ${cause instanceof Error ? cause.message : String(cause)} (is the daemon running? start it with vfsd serve)`);
  }
}

/** A request or a wait for an event took longer than its timeout. */
export class TimeoutError extends VfsdError {
  override name = "TimeoutError";
}

/** The daemon's answer was not what the API describes. */
export class ProtocolError extends VfsdError {
  override name = "ProtocolError";
}

/**
 * A tool call failed (thrown by `ToolCall.check()`; a tool's refusal is
 * otherwise a result, not an exception): `status` is the result's status
 * word, `code` its error code.
 */
export class ToolError extends VfsdError {
  override name = "ToolError";
  constructor(
    readonly tool: string,
    readonly status: string,
    readonly code: string,
    readonly summary: string,
    readonly receipt: unknown,
  ) {
    super(`${tool}: ${code || status}: ${summary}`);
  }
}
