"""vfsd: the Python client of the vfsd daemon (copy-on-write workspaces for AI agents).

    import vfsd

    c = vfsd.Client.from_env()                      # the socket, or VFSD_ADDR + VFSD_TOKEN
    s = c.create_session(mounts=[vfsd.folder("/home/me/src/app", include=["**/*.py"])])
    r = c.call(s["session"]["id"], "read_file", {"path": "main.py"})
    snap = c.create_snapshot(s["session"]["id"], label="before the model's turn")

Wire types are TypedDicts generated from the daemon's OpenAPI description;
API failures raise APIError subclasses carrying the stable code. See
clients/python/README.md and docs/api.md.
"""

from ._client import Client, EventStream, ProgressCallback, StreamEvent, ToolCall, folder
from ._errors import (AlreadyExists, APIError, Conflict, Fenced, Forbidden, InternalError, InvalidInput, InvalidPath,
                      InvalidPattern, LimitExceeded, MethodNotAllowed, NotFound, ProtocolError, TooLarge, ToolError,
                      Unauthorized, Unavailable, UnreachableError, VfsdError, error_for)
from ._tools import VFSD_TOOLS
from . import _types
from ._types import *  # noqa: F401,F403  (the wire types)

__version__ = "0.1.0"

__all__ = [
    "Client", "EventStream", "ProgressCallback", "StreamEvent", "ToolCall", "folder", "VFSD_TOOLS",
    "VfsdError", "APIError", "UnreachableError", "ProtocolError", "ToolError", "error_for",
    "NotFound", "AlreadyExists", "Conflict", "InvalidInput", "InvalidPath", "InvalidPattern", "TooLarge",
    "Forbidden", "Unauthorized", "LimitExceeded", "MethodNotAllowed", "Fenced", "Unavailable", "InternalError",
    "__version__",
]
__all__ += _types.__all__
