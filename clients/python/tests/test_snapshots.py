"""Snapshots: create (with progress), list, get, restore, fork, delete; diffs; garbage collection; quota."""

from __future__ import annotations

from typing import List

import pytest

from conftest import vfsd


def test_snapshot_restore_fork_delete(client: vfsd.Client, session: str) -> None:
    s = session
    client.call(s, "write_file", {"path": "a.txt", "content": "before\n"}).check()
    seen: List[vfsd.Progress] = []
    snap = client.create_snapshot(s, label="before", progress=seen.append)
    assert snap["label"] == "before" and snap["session"] == s and len(snap["id"]) == 64
    assert all(p["phase"] == "seal" for p in seen)
    client.call(s, "write_file", {"path": "a.txt", "content": "after\n"}).check()
    assert client.session(s)["dirty"] >= 1

    assert [x["id"] for x in client.session_snapshots(s)] == [snap["id"]]
    assert snap["id"] in [x["id"] for x in client.snapshots(session=s)]
    assert snap["id"] in [x["id"] for x in client.snapshots()]
    assert client.snapshot(snap["id"][:12])["id"] == snap["id"]

    restored = client.restore(s, snap["id"][:8])
    assert restored["last_snapshot"] == snap["id"]
    assert client.call(s, "read_file", {"path": "a.txt"}).receipt["inline_text"] == "before\n"

    fork = client.fork_snapshot(snap["id"], ttl="10m")
    fid = fork["session"]["id"]
    try:
        assert fork["session"]["base"] == snap["id"]
        assert client.call(fid, "read_file", {"path": "a.txt"}).receipt["inline_text"] == "before\n"
        with pytest.raises(vfsd.Conflict):  # the fork needs it
            client.delete_snapshot(snap["id"])
    finally:
        client.close_session(fid, purge=True)

    other = client.create_snapshot(s, label="second")
    assert client.delete_snapshot(other["id"], session=s)["deleted"] == [other["id"]]
    with pytest.raises(vfsd.NotFound):
        client.snapshot(other["id"])


def test_diffs(client: vfsd.Client, session: str) -> None:
    s = session
    client.call(s, "write_file", {"path": "a.txt", "content": "hello\n"}).check()
    snap = client.create_snapshot(s)
    client.call(s, "edit_file", {"path": "a.txt", "old_string": "hello", "new_string": "hi"}).check()
    client.call(s, "write_file", {"path": "b.txt", "content": "new\n"}).check()

    d = client.session_diff(s, from_=snap["id"], text=True)
    assert (d["added"], d["modified"], d["deleted"]) == (1, 1, 0)
    a = next(e for e in d["entries"] if e["path"] == "a.txt")
    assert a["change"] == "modified" and a["kind"] == "file" and "+hi" in a["text"]
    assert client.session_diff(s)["added"] == 2  # base (empty) to live
    u = client.session_diff_text(s, from_=snap["id"])
    assert u.startswith("diff --git a/a.txt b/a.txt") and "+hi" in u

    g = client.diff(snap["id"], f"session:{s}")
    assert [e["path"] for e in g["entries"]] == ["a.txt", "b.txt"]
    assert "+new" in client.diff_text(snap["id"], f"session:{s}")
    with pytest.raises(vfsd.NotFound):
        client.session_diff(s, from_="nowhere-like-this")


def test_gc_and_snapshot_quota(client: vfsd.Client, sid: str) -> None:
    client.create_session(id=sid, quota={"max_snapshots": 1})
    try:
        client.create_snapshot(sid)
        with pytest.raises(vfsd.TooLarge) as e:
            client.create_snapshot(sid)
        assert e.value.code == "too_large" and e.value.status == 413
    finally:
        client.close_session(sid, purge=True)
    rep = client.gc()
    assert rep["snapshots"] >= 0 and rep["duration_ms"] >= 0 and "deleted_bytes" in rep
