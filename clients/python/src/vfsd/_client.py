"""The client: one method per route of the vfsd HTTP API."""

from __future__ import annotations

import datetime as _dt
import io
import json
import os
import socket
from dataclasses import dataclass, field
from typing import (IO, Any, Callable, Dict, Generic, Iterator, List, Mapping, Optional, Sequence, TypeVar,
                    Union, cast)

from ._errors import ProtocolError, ToolError, error_for
from ._tools import ToolCalls
from ._transport import Query, Response, Transport, default_socket, seg, split_where
from ._types import (ApplyReport, Blob, CallList, CreateSessionResponse, DaemonList, DeleteSnapshotsResponse, Diff,
                     Event, FailureReceipt, FuseMount, GCReport, Health, Log, Mount, MoveReport, Policy, Progress,
                     PushReport, Quota, RebaseReport, Ref, RefList, RemoteGCReport, RemoteStatus, ResetResponse,
                     RewindResponse, Session, Snapshot, SnapshotList, ToolList, UILoginResponse)

__all__ = ["Client", "ToolCall", "StreamEvent", "EventStream", "ProgressCallback"]

R = TypeVar("R")

#: Receives a long operation's progress (imports, a snapshot's sealing).
ProgressCallback = Callable[[Progress], None]


@dataclass(frozen=True)
class ToolCall(Generic[R]):
    """The outcome of a tool call.

    ``receipt`` is the result's body exactly as the daemon sent it — for the
    vfsd contract the tool's receipt, typed for each tool; under another
    contract the object its document gives. A failed call is not an
    exception: ``ok`` is False, ``status`` is the failure's class and, for
    the vfsd contract, ``failure`` has the failure receipt's fields
    (``error_code``, ``summary_text``, details). ``check()`` raises
    ToolError instead.
    """

    tool: str
    #: The status word or error code (the Vfsd-Tool-Status header).
    status: str
    #: Whether the call failed, as the session's contract says.
    is_error: bool
    #: The session's contract.
    contract: str
    receipt: R
    #: The receipt's rendering for a model (call(..., text=True)), else None.
    text: Optional[str] = None

    @property
    def ok(self) -> bool:
        return not self.is_error

    @property
    def failure(self) -> Optional[FailureReceipt]:
        """The receipt as a failure receipt, when the call failed."""
        return cast(FailureReceipt, self.receipt) if self.is_error else None

    @property
    def error_code(self) -> str:
        """The failure's code: the receipt's error_code, else the status."""
        if not self.is_error:
            return ""
        rec: Any = self.receipt
        code = rec.get("error_code") if isinstance(rec, dict) else None
        return str(code or self.status)

    def check(self) -> "ToolCall[R]":
        """Return self, or raise ToolError when the call failed."""
        if self.is_error:
            rec: Any = self.receipt
            summary = ""
            if isinstance(rec, dict):
                summary = str(rec.get("summary_text") or rec.get("message") or rec.get("error") or "")
            raise ToolError(self.tool, self.status, self.error_code, summary, rec if isinstance(rec, dict) else None)
        return self


@dataclass(frozen=True)
class StreamEvent:
    """One server-sent event: ``name`` is ``change``, ``lost`` or ``closed``;
    ``data`` its decoded data (for ``change``, an Event)."""

    name: str
    data: Dict[str, Any] = field(default_factory=dict)
    id: Optional[str] = None

    @property
    def change(self) -> Optional[Event]:
        return cast(Event, self.data) if self.name == "change" else None


class EventStream:
    """A session's event stream (GET /v1/sessions/{id}/events): iterate over
    it, or call next(timeout=...). It starts from the present (no replay)
    and ends after a ``closed`` event. Close it when done (it is a context
    manager)."""

    def __init__(self, resp: Response, timeout: Optional[float]) -> None:
        self._resp = resp
        self._timeout = timeout
        self._done = False

    def __enter__(self) -> "EventStream":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __iter__(self) -> Iterator[StreamEvent]:
        while True:
            ev = self.next()
            if ev is None:
                return
            yield ev

    def next(self, timeout: Optional[float] = None) -> Optional[StreamEvent]:
        """The next event; None when the stream has ended. Raises
        TimeoutError when none came within timeout seconds (default: the
        stream's; the daemon sends a keepalive every 15 s, which does not
        count as an event)."""
        if self._done:
            return None
        self._resp.set_timeout(self._timeout if timeout is None else timeout)
        name, ev_id = "", None
        data: List[str] = []
        while True:
            try:
                raw = self._resp.readline(16 << 20)
            except socket.timeout as e:
                raise TimeoutError("no event from vfsd within the timeout") from e
            if not raw:  # the stream ended
                self._done = True
                self.close()
                return None
            line = raw.decode("utf-8").rstrip("\r\n")
            if line == "":
                if not name and not data:
                    continue  # a comment or a retry block
                text = "\n".join(data)
                try:
                    payload = json.loads(text) if text else {}
                except ValueError as e:
                    raise ProtocolError(f"events: data that is not JSON: {text[:200]!r}") from e
                ev = StreamEvent(name or "message", payload, ev_id)
                if ev.name == "closed":
                    self._done = True
                    self.close()
                return ev
            if line.startswith(":"):
                continue
            key, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if key == "event":
                name = value
            elif key == "data":
                data.append(value)
            elif key == "id":
                ev_id = value

    def close(self) -> None:
        self._resp.close()


def _json(resp: Response) -> Any:
    body = resp.read()
    try:
        return json.loads(body) if body else None
    except ValueError as e:
        raise ProtocolError(f"the daemon's answer is not JSON: {body[:200]!r}") from e


def _drop_none(d: Mapping[str, Any]) -> Dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


class Client(ToolCalls):
    """A client of one vfsd daemon, over its Unix socket (every request the
    admin's) or over TCP with a bearer token (the admin token, or a
    session's token, which reaches that session only).

        >>> c = vfsd.Client(socket="/run/user/1000/vfsd.sock")
        >>> c = vfsd.Client(addr="127.0.0.1:7070", token=os.environ["VFSD_TOKEN"])
        >>> c = vfsd.Client.from_env()   # VFSD_SOCKET, or VFSD_ADDR + VFSD_TOKEN

    Every call has a timeout (``timeout`` seconds, default 60; each method
    takes its own too). API failures raise APIError subclasses carrying
    the stable code (vfsd.NotFound, vfsd.Forbidden, ...); a daemon that
    cannot be reached raises UnreachableError. The client keeps no
    connection open between calls and may be shared between threads.
    """

    def __init__(self, socket: Optional[str] = None, addr: Optional[str] = None, token: Optional[str] = None,
                 timeout: float = 60.0) -> None:
        socket, addr = split_where(socket, addr)
        self._t = Transport(socket, addr, token, timeout)

    @classmethod
    def from_env(cls, timeout: float = 60.0) -> "Client":
        """The daemon the vfsd CLI would talk to: VFSD_ADDR (with
        VFSD_TOKEN) when set, else VFSD_SOCKET, else the default socket."""
        addr = os.environ.get("VFSD_ADDR")
        if addr:
            return cls(addr=addr, token=os.environ.get("VFSD_TOKEN"), timeout=timeout)
        return cls(socket=os.environ.get("VFSD_SOCKET") or default_socket(), timeout=timeout)

    def with_token(self, token: Optional[str]) -> "Client":
        """A client of the same daemon presenting another token (a
        session's, as create_session returns it). Over the socket every
        request is the admin's whatever the token."""
        c = Client.__new__(Client)
        c._t = Transport(self._t.socket_path, None if self._t.socket_path else self._t.where, token, self._t.timeout)
        return c

    @property
    def where(self) -> str:
        """Where the daemon is: the socket, or the TCP URL."""
        return self._t.where

    # -- plumbing --------------------------------------------------------

    def _do(self, method: str, path: str, *, query: Query = None, body: Any = None,
            timeout: Optional[float] = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        return _json(self._t.request(method, path, query=query, body=data, timeout=timeout))

    def _text(self, path: str, query: Query, timeout: Optional[float]) -> str:
        return self._t.request("GET", path, query=query, timeout=timeout, headers={"Accept": "*/*"}).read().decode("utf-8")

    def _progress(self, path: str, body: Any, progress: ProgressCallback, timeout: Optional[float]) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        resp = self._t.request("POST", path, query={"progress": True}, body=data, timeout=timeout,
                               headers={"Accept": "application/x-ndjson"})
        try:
            while True:
                raw = resp.readline(256 << 20)
                if not raw:
                    raise ProtocolError(f"POST {path}: the daemon ended the progress stream without a result (did it stop?)")
                if not raw.strip():
                    continue
                try:
                    line = json.loads(raw)
                except ValueError as e:
                    raise ProtocolError(f"POST {path}: a progress line that is not JSON: {raw[:200]!r}") from e
                if line.get("error"):
                    err = line["error"]
                    raise error_for(str(err.get("code", "error")), str(err.get("message", "")), int(line.get("status", 0)))
                if "result" in line:
                    return line["result"]
                if line.get("progress"):
                    progress(cast(Progress, line["progress"]))
        except socket.timeout as e:
            raise TimeoutError(f"POST {path}: no progress from vfsd within the timeout") from e
        finally:
            resp.close()

    # -- daemon ----------------------------------------------------------

    def health(self, *, timeout: Optional[float] = None) -> Health:
        """Check that the daemon answers (GET /healthz)."""
        return cast(Health, self._do("GET", "/healthz", timeout=timeout))

    def metrics(self, *, timeout: Optional[float] = None) -> str:
        """The daemon's metrics, Prometheus text format (GET /metrics; admin)."""
        return self._text("/metrics", None, timeout)

    # -- sessions --------------------------------------------------------

    def create_session(self, *, id: Optional[str] = None, mounts: Optional[Sequence[Mount]] = None,
                       base: Optional[str] = None, fork: Optional[str] = None,
                       policy: Union[str, Policy, Mapping[str, Any], None] = None, profile: Optional[str] = None,
                       ttl: Optional[str] = None, quota: Optional[Quota] = None, contract: Optional[str] = None,
                       contract_options: Optional[Mapping[str, Any]] = None, label: Optional[str] = None,
                       from_ref: Optional[str] = None, keep_ref: Optional[str] = None,
                       progress: Optional[ProgressCallback] = None,
                       timeout: Optional[float] = None) -> CreateSessionResponse:
        """Create a session (POST /v1/sessions; admin).

        At most one of ``mounts`` (host folders, each ``{"host_path": ...,
        "mount_path": ..., "include_glob": [...], "exclude_glob": [...]}``;
        see vfsd.folder()), ``base`` (a snapshot), ``from_ref`` (a ref of
        the fleet) and ``fork`` (a live session) says where it starts; none
        starts it empty. ``keep_ref`` names a ref of the fleet that follows
        the session's pushed head. ``progress``
        is called as host folders are imported. The answer has the session,
        its token (shown once) and the import's report.
        """
        body = _drop_none({"id": id, "mounts": list(mounts) if mounts is not None else None, "base": base,
                           "fork": fork, "policy": policy, "profile": profile, "ttl": ttl, "quota": quota,
                           "contract": contract, "contract_options": contract_options, "label": label,
                           "from_ref": from_ref, "keep_ref": keep_ref})
        if progress is not None:
            return cast(CreateSessionResponse, self._progress("/v1/sessions", body, progress, timeout))
        return cast(CreateSessionResponse, self._do("POST", "/v1/sessions", body=body, timeout=timeout))

    def sessions(self, *, timeout: Optional[float] = None) -> List[Session]:
        """The sessions, sorted by ID (GET /v1/sessions; admin)."""
        return cast(List[Session], self._do("GET", "/v1/sessions", timeout=timeout)["sessions"])

    def session(self, id: str, *, timeout: Optional[float] = None) -> Session:
        """Describe a session (GET /v1/sessions/{id})."""
        return cast(Session, self._do("GET", f"/v1/sessions/{seg(id)}", timeout=timeout))

    def update_session(self, id: str, *, ttl: Optional[str] = None, keep_ref: Optional[str] = None,
                       timeout: Optional[float] = None) -> Session:
        """Restart a session's lifetime (``ttl``: a Go duration such as "2h",
        or "never") and/or name the fleet's ref that follows its pushed head
        (``keep_ref``; "-" stops it) (PATCH /v1/sessions/{id}; admin)."""
        if ttl is None and keep_ref is None:
            raise ValueError("update_session: give ttl, keep_ref or both")
        body = _drop_none({"ttl": ttl, "keep_ref": keep_ref})
        return cast(Session, self._do("PATCH", f"/v1/sessions/{seg(id)}", body=body, timeout=timeout))

    def close_session(self, id: str, *, purge: Optional[bool] = None, timeout: Optional[float] = None) -> None:
        """Close a session (DELETE /v1/sessions/{id}). ``purge=True`` also
        deletes the snapshots taken of it that no other session needs;
        False keeps them even where its contract purges (weakincentives);
        None lets the contract decide."""
        self._t.request("DELETE", f"/v1/sessions/{seg(id)}", query={"purge": purge}, timeout=timeout).read()

    def reset_session(self, id: str, *, progress: Optional[ProgressCallback] = None,
                      timeout: Optional[float] = None) -> ResetResponse:
        """Return a session to its start, importing its host folders again
        if it was staged from them (POST /v1/sessions/{id}/reset)."""
        path = f"/v1/sessions/{seg(id)}/reset"
        if progress is not None:
            return cast(ResetResponse, self._progress(path, None, progress, timeout))
        return cast(ResetResponse, self._do("POST", path, timeout=timeout))

    def fork_session(self, id: str, *, new_id: Optional[str] = None,
                     policy: Union[str, Policy, Mapping[str, Any], None] = None,
                     profile: Optional[str] = None, ttl: Optional[str] = None, quota: Optional[Quota] = None,
                     contract: Optional[str] = None, contract_options: Optional[Mapping[str, Any]] = None,
                     label: Optional[str] = None, timeout: Optional[float] = None) -> CreateSessionResponse:
        """A new session from a live session's current state (POST
        /v1/sessions/{id}/fork). With a session token: its own session only,
        no ``new_id``, within its policy's max_forks (LimitExceeded)."""
        body = _drop_none({"id": new_id, "policy": policy, "profile": profile, "ttl": ttl, "quota": quota,
                           "contract": contract, "contract_options": contract_options, "label": label})
        return cast(CreateSessionResponse, self._do("POST", f"/v1/sessions/{seg(id)}/fork", body=body, timeout=timeout))

    def contract_state(self, id: str, *, timeout: Optional[float] = None) -> Dict[str, Any]:
        """The state the session's contract offers (GET
        /v1/sessions/{id}/contract/state): weakincentives' VirtualFileSystem
        (vfsd.WeakincentivesState); NotFound for contracts without one."""
        return cast(Dict[str, Any], self._do("GET", f"/v1/sessions/{seg(id)}/contract/state", timeout=timeout))

    # -- tools -----------------------------------------------------------

    def tools(self, id: str, *, profile: Optional[str] = None, timeout: Optional[float] = None) -> ToolList:
        """The session's tools in a provider's format and their prompt
        section (GET /v1/sessions/{id}/tools): hand ``tools`` to the model."""
        return cast(ToolList, self._do("GET", f"/v1/sessions/{seg(id)}/tools", query={"profile": profile}, timeout=timeout))

    def _call_tool(self, session: str, tool: str, params: Optional[Mapping[str, Any]], *, text: bool,
                   contract: Optional[str], timeout: Optional[float]) -> ToolCall[Any]:
        body = json.dumps(dict(params) if params is not None else {}).encode("utf-8")
        resp = self._t.request("POST", f"/v1/sessions/{seg(session)}/tools/{seg(tool)}",
                               query={"text": True if text else None, "contract": contract}, body=body, timeout=timeout)
        status = resp.headers.get("Vfsd-Tool-Status", "")
        is_error = resp.headers.get("Vfsd-Tool-Error") == "true"
        kind = resp.headers.get("Vfsd-Tool-Contract", "")
        out = _json(resp)
        rendered: Optional[str] = None
        if text:
            if not isinstance(out, dict) or "receipt" not in out:
                raise ProtocolError(f"tool {tool}: a ?text=true answer without a receipt")
            rendered = str(out.get("text", ""))
            out = out["receipt"]
        if not status and isinstance(out, dict):
            status = str(out.get("status", ""))
        return ToolCall(tool=tool, status=status, is_error=is_error, contract=kind, receipt=out, text=rendered)

    def calls(self, id: str, *, since: int = 0, limit: int = 0, timeout: Optional[float] = None) -> CallList:
        """A page of the session's call log: the calls after number
        ``since``, oldest first (GET /v1/sessions/{id}/calls). ``next`` is
        the since of the next page (absent on the last)."""
        q = {"since": since or None, "limit": limit or None}
        return cast(CallList, self._do("GET", f"/v1/sessions/{seg(id)}/calls", query=q, timeout=timeout))

    # -- history ---------------------------------------------------------

    def log(self, id: str, *, offset: int = 0, limit: int = 0, patch: bool = False,
            timeout: Optional[float] = None) -> Log:
        """A page of the session's history: tool calls, mount changes and
        session operations, oldest first (GET /v1/sessions/{id}/log)."""
        q = {"offset": offset or None, "limit": limit or None, "patch": True if patch else None}
        return cast(Log, self._do("GET", f"/v1/sessions/{seg(id)}/log", query=q, timeout=timeout))

    def log_all(self, id: str, *, patch: bool = False, timeout: Optional[float] = None) -> Log:
        """Every page of the session's history."""
        out = self.log(id, patch=patch, timeout=timeout)
        nxt = out.get("next", 0)
        while nxt:
            page = self.log(id, offset=nxt, patch=patch, timeout=timeout)
            out["entries"].extend(page["entries"])
            out["total"], out["seq"], nxt = page["total"], page["seq"], page.get("next", 0)
        out.pop("next", None)
        return out

    def rewind(self, id: str, *, call: Optional[int] = None, seq: Optional[int] = None,
               time: Union[str, _dt.datetime, None] = None, snapshot: Optional[str] = None,
               timeout: Optional[float] = None) -> RewindResponse:
        """Put the session back to an earlier state: just before ``call`` N,
        just after journal event ``seq``, the state at ``time``, or a
        ``snapshot``'s — exactly one (POST /v1/sessions/{id}/rewind). The
        rewind is undoable: rewind to the answer's ``from``."""
        if isinstance(time, _dt.datetime):
            if time.tzinfo is None:
                raise ValueError("rewind: give an aware datetime (with a time zone)")
            time = time.astimezone(_dt.timezone.utc).isoformat().replace("+00:00", "Z")
        body = _drop_none({"call": call, "seq": seq, "time": time, "snapshot": snapshot})
        return cast(RewindResponse, self._do("POST", f"/v1/sessions/{seg(id)}/rewind", body=body, timeout=timeout))

    def rebase(self, id: str, *, dry_run: bool = False, timeout: Optional[float] = None) -> RebaseReport:
        """Import the session's host folders again and replay its changes on
        top, merging files both changed (POST /v1/sessions/{id}/rebase; admin)."""
        body = {"dry_run": True} if dry_run else {}
        return cast(RebaseReport, self._do("POST", f"/v1/sessions/{seg(id)}/rebase", body=body, timeout=timeout))

    # -- snapshots -------------------------------------------------------

    def create_snapshot(self, id: str, *, label: Optional[str] = None, progress: Optional[ProgressCallback] = None,
                        timeout: Optional[float] = None) -> Snapshot:
        """Snapshot the session (POST /v1/sessions/{id}/snapshots): costs
        what changed since its last snapshot. TooLarge past its quota's
        max_snapshots."""
        body = _drop_none({"label": label})
        path = f"/v1/sessions/{seg(id)}/snapshots"
        if progress is not None:
            return cast(Snapshot, self._progress(path, body, progress, timeout))
        return cast(Snapshot, self._do("POST", path, body=body, timeout=timeout))

    def session_snapshots(self, id: str, *, timeout: Optional[float] = None) -> List[Snapshot]:
        """The snapshots taken of the session, newest first (GET
        /v1/sessions/{id}/snapshots)."""
        return cast(List[Snapshot], self._do("GET", f"/v1/sessions/{seg(id)}/snapshots", timeout=timeout)["snapshots"])

    def snapshots(self, *, session: Optional[str] = None, local: bool = False,
                  timeout: Optional[float] = None) -> List[Snapshot]:
        """Every snapshot, or those taken of sessions named ``session``,
        newest first (GET /v1/snapshots; admin): with a remote, the fleet's
        pushed snapshots too unless ``local``. snapshot_list() also says
        when the fleet's part is missing."""
        return self.snapshot_list(session=session, local=local, timeout=timeout)["snapshots"]

    def snapshot_list(self, *, session: Optional[str] = None, local: bool = False,
                      timeout: Optional[float] = None) -> SnapshotList:
        """snapshots() with the whole answer: ``fleet_error`` says why the
        fleet's snapshots are missing (the remote did not answer in time)."""
        q = {"session": session, "local": True if local else None}
        return cast(SnapshotList, self._do("GET", "/v1/snapshots", query=q, timeout=timeout))

    def snapshot(self, snap: str, *, timeout: Optional[float] = None) -> Snapshot:
        """Describe a snapshot, by ID or unique prefix (GET /v1/snapshots/{snap}; admin)."""
        return cast(Snapshot, self._do("GET", f"/v1/snapshots/{seg(snap)}", timeout=timeout))

    def delete_snapshot(self, snap: str, *, session: Optional[str] = None,
                        timeout: Optional[float] = None) -> DeleteSnapshotsResponse:
        """Delete a snapshot (DELETE /v1/snapshots/{snap}, admin; with
        ``session``, DELETE /v1/sessions/{id}/snapshots/{snap}: a snapshot
        taken of that session, what a session token may delete). Conflict
        when a live session needs it; GC reclaims its content."""
        path = f"/v1/sessions/{seg(session)}/snapshots/{seg(snap)}" if session else f"/v1/snapshots/{seg(snap)}"
        return cast(DeleteSnapshotsResponse, self._do("DELETE", path, timeout=timeout))

    def restore(self, id: str, snapshot: str, *, timeout: Optional[float] = None) -> Session:
        """Return the session to a snapshot, in O(1) (POST /v1/sessions/{id}/restore)."""
        return cast(Session, self._do("POST", f"/v1/sessions/{seg(id)}/restore", body={"snapshot": snapshot},
                                      timeout=timeout))

    def fork_snapshot(self, snap: str, *, new_id: Optional[str] = None,
                      policy: Union[str, Policy, Mapping[str, Any], None] = None,
                      profile: Optional[str] = None, ttl: Optional[str] = None, quota: Optional[Quota] = None,
                      contract: Optional[str] = None, contract_options: Optional[Mapping[str, Any]] = None,
                      label: Optional[str] = None, timeout: Optional[float] = None) -> CreateSessionResponse:
        """A new session from a snapshot (POST /v1/snapshots/{snap}/fork; admin)."""
        body = _drop_none({"id": new_id, "policy": policy, "profile": profile, "ttl": ttl, "quota": quota,
                           "contract": contract, "contract_options": contract_options, "label": label})
        return cast(CreateSessionResponse, self._do("POST", f"/v1/snapshots/{seg(snap)}/fork", body=body, timeout=timeout))

    def session_diff(self, id: str, *, from_: Optional[str] = None, to: Optional[str] = None, text: bool = False,
                     timeout: Optional[float] = None) -> Diff:
        """Diff two states of the session: ``base`` (default from),
        ``import``, ``live`` (default to) or a snapshot (GET
        /v1/sessions/{id}/diff). ``text`` adds unified diffs of text files."""
        q = {"from": from_, "to": to, "text": True if text else None}
        return cast(Diff, self._do("GET", f"/v1/sessions/{seg(id)}/diff", query=q, timeout=timeout))

    def session_diff_text(self, id: str, *, from_: Optional[str] = None, to: Optional[str] = None,
                          timeout: Optional[float] = None) -> str:
        """session_diff as one unified diff, as git diff prints it."""
        return self._text(f"/v1/sessions/{seg(id)}/diff", {"from": from_, "to": to, "format": "unified"}, timeout)

    def diff(self, from_: str, to: str, *, text: bool = False, timeout: Optional[float] = None) -> Diff:
        """Diff two snapshots or live sessions (``session:ID``) (GET /v1/diff; admin)."""
        q = {"from": from_, "to": to, "text": True if text else None}
        return cast(Diff, self._do("GET", "/v1/diff", query=q, timeout=timeout))

    def diff_text(self, from_: str, to: str, *, timeout: Optional[float] = None) -> str:
        """diff as one unified diff."""
        return self._text("/v1/diff", {"from": from_, "to": to, "format": "unified"}, timeout)

    def gc(self, *, timeout: Optional[float] = None) -> GCReport:
        """Delete the blobs nothing references (POST /v1/gc; admin)."""
        return cast(GCReport, self._do("POST", "/v1/gc", timeout=timeout))

    # -- remote ----------------------------------------------------------

    def push_snapshot(self, snap: str, *, timeout: Optional[float] = None) -> PushReport:
        """Upload a snapshot to the daemon's remote and wait (POST
        /v1/snapshots/{snap}/push; admin). Unavailable without a remote."""
        return cast(PushReport, self._do("POST", f"/v1/snapshots/{seg(snap)}/push", timeout=timeout))

    def remote_status(self, *, timeout: Optional[float] = None) -> RemoteStatus:
        """The daemon's remote, its pushes and its cache (GET /v1/remote; admin)."""
        return cast(RemoteStatus, self._do("GET", "/v1/remote", timeout=timeout))

    def remote_gc(self, *, timeout: Optional[float] = None) -> RemoteGCReport:
        """Collect the remote's garbage (POST /v1/remote/gc; admin).
        Unavailable without a remote."""
        return cast(RemoteGCReport, self._do("POST", "/v1/remote/gc", timeout=timeout))

    # -- fleet -----------------------------------------------------------

    def daemons(self, *, timeout: Optional[float] = None) -> DaemonList:
        """The daemons sharing this daemon's remote, with their heartbeats,
        and this daemon's fleet name as ``self`` (GET /v1/daemons; admin).
        Unavailable without a remote."""
        return cast(DaemonList, self._do("GET", "/v1/daemons", timeout=timeout))

    def move_session(self, id: str, to: str, *, timeout: Optional[float] = None) -> MoveReport:
        """Hand the session to the fleet's daemon ``to`` (POST
        /v1/sessions/{id}/move; admin): freeze, snapshot, push, move the
        ownership by compare-and-swap. From then on this daemon answers the
        session's calls with Fenced; ``to`` adopts it at its first call."""
        return cast(MoveReport, self._do("POST", f"/v1/sessions/{seg(id)}/move", body={"to": to}, timeout=timeout))

    def take_session(self, id: str, *, timeout: Optional[float] = None) -> Session:
        """Take over a session whose owner's lease has ended (POST
        /v1/sessions/{id}/take; admin): the next epoch, from its pushed head.
        A live owner is refused with Conflict."""
        return cast(Session, self._do("POST", f"/v1/sessions/{seg(id)}/take", timeout=timeout))

    def refs(self, *, timeout: Optional[float] = None) -> RefList:
        """The fleet's refs (GET /v1/refs; admin)."""
        return cast(RefList, self._do("GET", "/v1/refs", timeout=timeout))

    def ref(self, name: str, *, timeout: Optional[float] = None) -> Ref:
        """One ref (GET /v1/refs/{name}; admin). NotFound when it does not exist."""
        return cast(Ref, self._do("GET", f"/v1/refs/{_ref_path(name)}", timeout=timeout))

    def set_ref(self, name: str, snapshot: str, *, expect: Optional[str] = None, expect_absent: bool = False,
                timeout: Optional[float] = None) -> Ref:
        """Point the ref ``name`` at ``snapshot`` (PUT /v1/refs/{name}; admin);
        a local snapshot is pushed first. Concurrent movers retry and none
        loses its move. ``expect`` (a snapshot ID) moves it only while it
        points there, ``expect_absent`` only while it does not exist: else
        Conflict."""
        if expect is not None and expect_absent:
            raise ValueError("set_ref: expect and expect_absent exclude each other")
        body = _drop_none({"snapshot": snapshot, "expect": expect,
                           "expect_set": True if expect is not None or expect_absent else None})
        return cast(Ref, self._do("PUT", f"/v1/refs/{_ref_path(name)}", body=body, timeout=timeout))

    def delete_ref(self, name: str, *, timeout: Optional[float] = None) -> None:
        """Remove a ref (DELETE /v1/refs/{name}; admin); its snapshot stays."""
        self._t.request("DELETE", f"/v1/refs/{_ref_path(name)}", timeout=timeout).read()

    # -- host ------------------------------------------------------------

    def apply(self, id: str, *, dry_run: bool = False, keep_setid: bool = False,
              timeout: Optional[float] = None) -> ApplyReport:
        """Write the session's changes back to its host folders (POST
        /v1/sessions/{id}/apply; admin). Paths the host changed since the
        import are conflicts, reported and left alone."""
        body = _drop_none({"dry_run": dry_run or None, "keep_setid": keep_setid or None})
        return cast(ApplyReport, self._do("POST", f"/v1/sessions/{seg(id)}/apply", body=body, timeout=timeout))

    def mount(self, id: str, dir: str, *, read_only: bool = False, allow_other: bool = False,
              uid: Optional[int] = None, gid: Optional[int] = None, no_default_permissions: bool = False,
              backend: Optional[str] = None, allow_setid: bool = False, allow_devices: bool = False,
              timeout: Optional[float] = None) -> FuseMount:
        """Mount the session at an existing, empty host directory (POST
        /v1/sessions/{id}/mount; admin): FUSE by default, or ``backend``
        "overlay" / "auto"."""
        body = _drop_none({"dir": dir, "read_only": read_only or None, "allow_other": allow_other or None,
                           "uid": uid, "gid": gid, "no_default_permissions": no_default_permissions or None,
                           "backend": backend, "allow_setid": allow_setid or None,
                           "allow_devices": allow_devices or None})
        return cast(FuseMount, self._do("POST", f"/v1/sessions/{seg(id)}/mount", body=body, timeout=timeout))

    def unmount(self, id: str, dir: Optional[str] = None, *, timeout: Optional[float] = None) -> None:
        """Unmount the session's mount at ``dir``, or all of them (DELETE
        /v1/sessions/{id}/mount; admin)."""
        self._t.request("DELETE", f"/v1/sessions/{seg(id)}/mount", query={"dir": dir}, timeout=timeout).read()

    # -- events ----------------------------------------------------------

    def events(self, id: str, *, timeout: Optional[float] = 60.0) -> EventStream:
        """Open the session's event stream (GET /v1/sessions/{id}/events).
        ``timeout`` bounds each wait for an event (None: no bound)."""
        resp = self._t.request("GET", f"/v1/sessions/{seg(id)}/events", headers={"Accept": "text/event-stream"},
                               timeout=timeout)
        return EventStream(resp, timeout)

    # -- blobs -----------------------------------------------------------

    def put_blob(self, content: Union[bytes, bytearray, IO[bytes]], *, timeout: Optional[float] = None) -> Blob:
        """Upload content as a blob (POST /v1/blobs): bytes, or a binary
        file (sent as it is read). The reference is valid write_file
        content (``{"path": ..., "blob_ref": ...}``)."""
        length: Optional[int] = None
        body: Any = content
        if not isinstance(content, (bytes, bytearray)):
            f = content
            try:
                length = os.fstat(f.fileno()).st_size - f.tell()
            except (AttributeError, OSError, io.UnsupportedOperation):
                length = None  # sent chunked
            body = iter(lambda: f.read(1 << 20), b"")
        resp = self._t.request("POST", "/v1/blobs", body=body, content_type="application/octet-stream",
                               timeout=timeout, content_length=length)
        return cast(Blob, _json(resp))

    def get_blob(self, ref: str, *, offset: Optional[int] = None, length: Optional[int] = None,
                 timeout: Optional[float] = None) -> bytes:
        """A blob's content, or the ``length`` bytes from ``offset`` (GET
        /v1/blobs/{ref}: ``blake3:<hex>`` as tools return it)."""
        headers = {"Accept": "application/octet-stream"}
        if offset is not None or length is not None:
            start = offset or 0
            headers["Range"] = f"bytes={start}-" + (str(start + length - 1) if length else "")
        return self._t.request("GET", f"/v1/blobs/{seg(ref)}", headers=headers, timeout=timeout).read()

    # -- MCP -------------------------------------------------------------

    def mcp(self, id: str, method: str, params: Optional[Mapping[str, Any]] = None, *, request_id: int = 1,
            profile: Optional[str] = None, timeout: Optional[float] = None) -> Dict[str, Any]:
        """Send one JSON-RPC request to the session's MCP endpoint (POST
        /v1/sessions/{id}/mcp, stateless streamable HTTP) and return the
        JSON-RPC answer (``result`` or ``error``). For a full MCP session,
        point an MCP client at the endpoint instead."""
        msg = _drop_none({"jsonrpc": "2.0", "id": request_id, "method": method,
                          "params": dict(params) if params is not None else None})
        resp = self._t.request("POST", f"/v1/sessions/{seg(id)}/mcp", query={"profile": profile},
                               body=json.dumps(msg).encode("utf-8"), timeout=timeout,
                               headers={"Accept": "application/json, text/event-stream"})
        ctype = resp.headers.get("Content-Type", "")
        body = resp.read().decode("utf-8")
        if ctype.startswith("text/event-stream"):
            data = [ln[5:].lstrip() for ln in body.splitlines() if ln.startswith("data:")]
            body = "\n".join(data)
        try:
            return cast(Dict[str, Any], json.loads(body))
        except ValueError as e:
            raise ProtocolError(f"mcp {method}: an answer that is not JSON-RPC: {body[:200]!r}") from e

    # -- review page -----------------------------------------------------

    def ui_login(self, *, session: Optional[str] = None, timeout: Optional[float] = None) -> UILoginResponse:
        """A one-time login for the review page (POST /v1/ui/login): the
        admin's, or one reaching ``session`` only."""
        return cast(UILoginResponse, self._do("POST", "/v1/ui/login", body=_drop_none({"session": session}),
                                              timeout=timeout))


def _ref_path(name: str) -> str:
    """A ref's name in a path: its slashes are the route's (team/main is
    /v1/refs/team/main), each segment escaped."""
    return "/".join(seg(part) for part in name.split("/"))


def folder(host_path: str, mount_path: Optional[str] = None, *, include: Sequence[str] = (),
           exclude: Sequence[str] = (), max_bytes: Optional[int] = None, follow_symlinks: bool = False,
           gitignore: bool = False, default_excludes: bool = False) -> Mount:
    """A host folder to stage into a new session (create_session(mounts=[...])):
    ``include``/``exclude`` are doublestar globs relative to host_path
    (exclude wins)."""
    m: Dict[str, Any] = {"host_path": host_path}
    if mount_path is not None:
        m["mount_path"] = mount_path
    if include:
        m["include_glob"] = list(include)
    if exclude:
        m["exclude_glob"] = list(exclude)
    if max_bytes is not None:
        m["max_bytes"] = max_bytes
    if follow_symlinks:
        m["follow_symlinks"] = True
    if gitignore:
        m["gitignore"] = True
    if default_excludes:
        m["default_excludes"] = True
    return cast(Mount, m)
