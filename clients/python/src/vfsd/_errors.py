"""Exceptions: API errors carry the daemon's stable code."""

from __future__ import annotations

import json
from typing import Any, Dict, Optional, Type

__all__ = [
    "VfsdError", "APIError", "UnreachableError", "ProtocolError", "ToolError",
    "NotFound", "AlreadyExists", "Conflict", "InvalidInput", "InvalidPath", "InvalidPattern",
    "TooLarge", "Forbidden", "Unauthorized", "LimitExceeded", "MethodNotAllowed", "Unavailable",
    "InternalError", "error_for",
]


class VfsdError(Exception):
    """Every exception this package raises."""


class APIError(VfsdError):
    """The daemon refused a request: code is the stable error code
    (``not_found``, ``forbidden``, ...: the ``ErrorCode`` of the OpenAPI
    description), message says what was wrong and what to do, status is the
    HTTP status it came with.

    Catch a subclass (``except vfsd.NotFound``) or branch on ``code``.
    """

    #: The code this class stands for (the base class: any).
    CODE = ""

    def __init__(self, code: str, message: str, status: int = 0) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.status = status


class NotFound(APIError):
    """``not_found``: no such session (or it expired), snapshot, blob, mount or route."""

    CODE = "not_found"


class AlreadyExists(APIError):
    """``already_exists``: a session with the requested ID exists."""

    CODE = "already_exists"


class Conflict(APIError):
    """``conflict``: the request conflicts with the current state."""

    CODE = "conflict"


class InvalidInput(APIError):
    """``invalid_input``: a parameter is missing, malformed or out of range."""

    CODE = "invalid_input"


class InvalidPath(APIError):
    """``invalid_path``: a path could not be canonicalised."""

    CODE = "invalid_path"


class InvalidPattern(APIError):
    """``invalid_pattern``: a glob does not parse."""

    CODE = "invalid_pattern"


class TooLarge(APIError):
    """``too_large``: a body, an import or a session over its limit."""

    CODE = "too_large"


class Forbidden(APIError):
    """``forbidden``: the caller may not do this (token scope, allowed roots)."""

    CODE = "forbidden"


class Unauthorized(APIError):
    """``unauthorized``: no valid token was presented (TCP)."""

    CODE = "unauthorized"


class LimitExceeded(APIError):
    """``limit_exceeded``: a policy's bound is used up (max_forks); ask the admin."""

    CODE = "limit_exceeded"


class MethodNotAllowed(APIError):
    """``method_not_allowed``: the path exists under other methods."""

    CODE = "method_not_allowed"


class Fenced(APIError):
    """``fenced``: the session belongs to another daemon of the fleet now (moved
    or taken over); the message names it. Nothing this daemon acknowledged is lost."""

    CODE = "fenced"


class Unavailable(APIError):
    """``unavailable``: the daemon is stopping, or a facility (FUSE, the remote) is missing."""

    CODE = "unavailable"


class InternalError(APIError):
    """``error``: anything else; the message says what failed."""

    CODE = "error"


_BY_CODE: Dict[str, Type[APIError]] = {
    c.CODE: c for c in (NotFound, AlreadyExists, Conflict, InvalidInput, InvalidPath, InvalidPattern, TooLarge,
                        Forbidden, Unauthorized, LimitExceeded, MethodNotAllowed, Fenced, Unavailable, InternalError)
}

# The code of an answer whose body is not the error envelope (the MCP
# endpoint's plain-text 405), by its status.
_BY_STATUS = {400: "invalid_input", 401: "unauthorized", 403: "forbidden", 404: "not_found",
              405: "method_not_allowed", 409: "conflict", 413: "too_large", 503: "unavailable"}


def error_for(code: str, message: str, status: int = 0) -> APIError:
    """The exception for an error code: its class, or APIError for a code
    this package does not know (a newer daemon's)."""
    return _BY_CODE.get(code, APIError)(code, message, status)


def error_from_response(status: int, body: bytes, what: str) -> APIError:
    """The exception for a non-2xx answer."""
    try:
        env: Any = json.loads(body)
        err = env["error"]
        return error_for(str(err["code"]), str(err["message"]), status)
    except (ValueError, KeyError, TypeError):
        text = body.decode("utf-8", "replace").strip()[:2000]
        return error_for(_BY_STATUS.get(status, "error"), f"{what}: HTTP {status}: {text}", status)


class UnreachableError(VfsdError, ConnectionError):
    """The daemon could not be reached at all (no socket, nothing listening,
    the connection dropped)."""

    def __init__(self, where: str, cause: BaseException) -> None:
        super().__init__(f"cannot reach vfsd at {where}: {cause} (is the daemon running? start it with vfsd serve)")
        self.where = where
        self.cause = cause


class ProtocolError(VfsdError):
    """The daemon's answer was not what the API describes (a stream that
    ended early, a body that is not JSON)."""


class ToolError(VfsdError):
    """A tool call failed (raised by ToolCall.check(); a tool's refusal is
    otherwise a receipt, not an exception): status is the result's status
    word, code its error code (vfsd's ``error_code``, or the status under
    contracts without one)."""

    def __init__(self, tool: str, status: str, code: str, summary: str, receipt: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(f"{tool}: {code or status}: {summary}")
        self.tool = tool
        self.status = status
        self.code = code
        self.summary = summary
        self.receipt = receipt or {}
