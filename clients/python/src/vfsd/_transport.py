"""HTTP over the daemon's Unix socket or TCP, with the standard library."""

from __future__ import annotations

import http.client
import os
import socket
import urllib.parse
from typing import Dict, Iterable, Mapping, Optional, Tuple, Union

from ._errors import UnreachableError, error_from_response

Body = Union[bytes, Iterable[bytes], None]
Query = Optional[Mapping[str, Union[str, int, bool, None]]]


class _UnixConnection(http.client.HTTPConnection):
    """An HTTP connection over a Unix socket."""

    def __init__(self, path: str, timeout: Optional[float]) -> None:
        super().__init__("vfsd", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        try:
            s.connect(self._path)
        except BaseException:
            s.close()
            raise
        self.sock = s


def encode_query(query: Query) -> str:
    """?k=v&... of the items that are not None; booleans as true/false."""
    if not query:
        return ""
    items = []
    for k, v in query.items():
        if v is None:
            continue
        if isinstance(v, bool):
            v = "true" if v else "false"
        items.append((k, str(v)))
    return "?" + urllib.parse.urlencode(items) if items else ""


def seg(s: str) -> str:
    """One path segment, escaped."""
    return urllib.parse.quote(s, safe="")


class Response:
    """A 2xx answer. For a stream, read it through ``stream`` and close it."""

    def __init__(self, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, where: str) -> None:
        self._conn = conn
        self.stream = resp
        self.status = resp.status
        self.headers = resp.headers
        self._where = where

    def read(self) -> bytes:
        try:
            return self.stream.read()
        except (OSError, http.client.HTTPException) as e:
            raise UnreachableError(self._where, e) from e
        finally:
            self.close()

    def readline(self, limit: int = -1) -> bytes:
        try:
            return self.stream.readline(limit)
        except socket.timeout:
            raise
        except (OSError, http.client.HTTPException) as e:
            raise UnreachableError(self._where, e) from e

    def set_timeout(self, timeout: Optional[float]) -> None:
        """The longest a read of the stream waits (None: forever)."""
        if self._conn.sock is not None:
            self._conn.sock.settimeout(timeout)

    def close(self) -> None:
        self.stream.close()
        self._conn.close()


class Transport:
    """Sends requests to one daemon: over its Unix socket, or over TCP with
    a bearer token. A connection per request: nothing is shared between
    threads, and nothing is left open but the streams the caller holds."""

    def __init__(self, socket_path: Optional[str], addr: Optional[str], token: Optional[str], timeout: float) -> None:
        self.socket_path = socket_path
        self.token = token
        self.timeout = timeout
        self._https = False
        if socket_path:
            self.where = f"the socket {socket_path}"
            self._host, self._port = "vfsd", None
        elif addr:
            url = addr if "://" in addr else "http://" + addr
            u = urllib.parse.urlsplit(url)
            if u.scheme not in ("http", "https") or not u.hostname:
                raise ValueError(f"vfsd: address {addr!r}: use host:port or an http(s):// URL")
            self._https = u.scheme == "https"
            self._host, self._port = u.hostname, u.port
            self.where = url.rstrip("/")
        else:
            raise ValueError("vfsd: give the daemon's socket or TCP address")

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        if self.socket_path:
            return _UnixConnection(self.socket_path, timeout)
        if self._https:
            return http.client.HTTPSConnection(self._host, self._port, timeout=timeout)
        return http.client.HTTPConnection(self._host, self._port, timeout=timeout)

    def request(self, method: str, path: str, *, query: Query = None, body: Body = None,
                content_type: Optional[str] = None, headers: Optional[Dict[str, str]] = None,
                timeout: Optional[float] = None, content_length: Optional[int] = None) -> Response:
        """Send the request; return the answer when it is 2xx, raise the
        APIError it carries otherwise (UnreachableError when the daemon
        cannot be reached)."""
        url = path + encode_query(query)
        h = {"Accept": "application/json"}
        if headers:
            h.update(headers)
        if body is not None:
            h["Content-Type"] = content_type or "application/json"
            if isinstance(body, (bytes, bytearray)):
                h["Content-Length"] = str(len(body))
            elif content_length is not None:
                h["Content-Length"] = str(content_length)
        if self.token:
            h["Authorization"] = "Bearer " + self.token
        conn = self._connection(self.timeout if timeout is None else timeout)
        try:
            chunked = body is not None and not isinstance(body, (bytes, bytearray)) and content_length is None
            conn.request(method, url, body=body, headers=h, encode_chunked=chunked)
            resp = conn.getresponse()
        except socket.timeout as e:
            conn.close()
            raise TimeoutError(f"{method} {path}: no answer from vfsd at {self.where} within {conn.timeout}s") from e
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise UnreachableError(self.where, e) from e
        if 200 <= resp.status < 300:
            return Response(conn, resp, self.where)
        try:
            data = resp.read(1 << 20)
        except (OSError, http.client.HTTPException):
            data = b""
        finally:
            resp.close()
            conn.close()
        raise error_from_response(resp.status, data, f"{method} {path}")


def default_socket() -> str:
    """The socket vfsd serve listens on by default: $XDG_RUNTIME_DIR/vfsd.sock,
    else vfsd.sock in the data directory (~/.local/state/vfsd)."""
    run = os.environ.get("XDG_RUNTIME_DIR")
    if run:
        return os.path.join(run, "vfsd.sock")
    state = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return os.path.join(state, "vfsd", "vfsd.sock")


def split_where(socket_path: Optional[str], addr: Optional[str]) -> Tuple[Optional[str], Optional[str]]:
    if socket_path and addr:
        raise ValueError("vfsd: give the socket or the address, not both")
    return socket_path, addr
