"""The event stream: changes as they happen, and the end when the session closes."""

from __future__ import annotations

import threading

import pytest

from conftest import vfsd


def test_events(client: vfsd.Client, sid: str) -> None:
    client.create_session(id=sid)
    with client.events(sid, timeout=20) as stream:
        client.call(sid, "write_file", {"path": "a.txt", "content": "x"}).check()
        ev = stream.next()
        assert ev is not None and ev.name == "change" and ev.change is not None
        assert ev.change["op"] == "write" and ev.change["paths"] == ["a.txt"] and ev.id == str(ev.change["seq"])
        snap = client.create_snapshot(sid)
        names = []
        for ev in stream:
            names.append(ev.name)
            if ev.name == "change" and ev.data.get("op") == "snapshotted":
                assert ev.data["snapshot"] == snap["id"]
                break
        # Closing the session ends the stream with "closed".
        threading.Timer(0.2, lambda: client.close_session(sid, purge=True)).start()
        last = None
        for ev in stream:
            last = ev
        assert last is not None and last.name == "closed" and last.data["reason"]
        assert stream.next() is None


def test_events_timeout_and_errors(client: vfsd.Client, session: str) -> None:
    with client.events(session, timeout=0.5) as stream:
        with pytest.raises(TimeoutError):
            stream.next()
    with pytest.raises(vfsd.NotFound):
        client.events("no-such-session")
