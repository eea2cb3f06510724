// @vfsd/client: the TypeScript client of the vfsd daemon (copy-on-write
// workspaces for AI agents). Wire types are generated from the daemon's
// OpenAPI description (api/openapi.json) into schema.ts.

export { Client, EventStream, ToolCall, folder } from "./client.js";
export type { CallOptions, ClientOptions, CreateSessionOptions, ForkOptions, ProgressCallback, StreamEvent, ToolCallOptions } from "./client.js";
export {
  AlreadyExistsError, APIError, ConflictError, errorFor, ForbiddenError, InternalError, InvalidInputError, InvalidPathError,
  InvalidPatternError, LimitExceededError, MethodNotAllowedError, NotFoundError, ProtocolError, TimeoutError, TooLargeError,
  FencedError, ToolError, UnauthorizedError, UnavailableError, UnreachableError, VfsdError,
} from "./errors.js";
export { VFSD_TOOLS } from "./tools.js";
export type { VfsdToolName, VfsdTools } from "./tools.js";
export type * from "./schema.js";
