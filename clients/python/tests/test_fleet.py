"""The fleet: two daemons on one bucket — daemons, the fleet's snapshots and
short IDs, refs, hand-off, takeover, and the Fenced error."""

from __future__ import annotations

import time
import uuid
from typing import Iterator, Tuple

import pytest

from conftest import Daemon, need, s3_url, vfsd

LEASE = "2s"


@pytest.fixture(scope="module")
def fleet(vfsd_bin: str) -> Iterator[Tuple[Daemon, Daemon]]:
    url = s3_url("pyfleet-" + uuid.uuid4().hex[:8])
    need(url is not None, "an S3-compatible server (VFSD_S3_TEST_URL, as the Go tests take it)")
    assert url is not None
    args = ["--remote", url, "--lease", LEASE, "--max-clock-skew", "300ms"]
    a = Daemon(vfsd_bin, args + ["--name", "py-a"])
    try:
        b = Daemon(vfsd_bin, args + ["--name", "py-b"])
    except BaseException:
        a.stop()
        raise
    try:
        yield a, b
    finally:
        try:
            b.stop()
        finally:
            a.stop()


def push_head(c: vfsd.Client, sid: str) -> vfsd.Snapshot:
    """Snapshot the session and push it: its head in the fleet."""
    snap = c.create_snapshot(sid, label="head")
    c.push_snapshot(snap["id"])
    owner = c.session(sid).get("owner")
    assert owner is not None and owner["head"] == snap["id"], owner
    return snap


def read(c: vfsd.Client, sid: str, path: str) -> str:
    return str(c.call(sid, "read_file", {"path": path}).check().receipt["inline_text"])


def test_daemons(fleet: Tuple[Daemon, Daemon]) -> None:
    a, b = fleet
    deadline = time.monotonic() + 20
    while True:
        dl = a.client.daemons()
        names = {d["name"]: d for d in dl["daemons"]}
        if "py-b" in names or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert dl["self"] == "py-a"
    assert {"py-a", "py-b"} <= set(names), names
    assert names["py-a"].get("self") is True and names["py-a"]["alive"]


def test_view_short_ids_and_refs(fleet: Tuple[Daemon, Daemon]) -> None:
    a, b = fleet
    ca, cb = a.client, b.client
    sid = "pyv-" + uuid.uuid4().hex[:6]
    ca.create_session(id=sid)
    ca.call(sid, "write_file", {"path": "README", "content": "from A\n"}).check()
    snap = push_head(ca, sid)

    listed = cb.snapshot_list()
    assert "fleet_error" not in listed, listed.get("fleet_error")
    mine = [s for s in listed["snapshots"] if s["id"] == snap["id"]]
    assert mine and mine[0].get("daemon") == "py-a" and mine[0].get("remote") is True
    assert all(s["id"] != snap["id"] for s in cb.snapshots(local=True)), "local lists B's own only"
    assert cb.snapshot(snap["id"][:10])["id"] == snap["id"], "B resolves A's short ID"

    name = f"py/{sid}/main"
    ref = ca.set_ref(name, snap["id"][:10])
    assert ref["name"] == name and ref["snapshot"] == snap["id"] and ref["by"] == "py-a"
    assert cb.ref(name)["snapshot"] == snap["id"]
    assert name in [r["name"] for r in cb.refs()["refs"]]

    got = cb.create_session(id=sid + "-ref", from_ref=name)
    assert got["session"]["id"] == sid + "-ref"
    assert read(cb, sid + "-ref", "README") == "from A\n"

    # Conditional moves.
    ca.call(sid, "write_file", {"path": "README", "content": "second\n"}).check()
    snap2 = push_head(ca, sid)
    with pytest.raises(vfsd.Conflict):
        cb.set_ref(name, snap2["id"], expect="0" * 64)
    moved = cb.set_ref(name, snap2["id"], expect=snap["id"])
    assert moved["snapshot"] == snap2["id"] and moved["seq"] == ref["seq"] + 1 and moved["by"] == "py-b"
    with pytest.raises(vfsd.Conflict):
        cb.set_ref(name, snap["id"], expect_absent=True)
    created = cb.set_ref(name + "-new", snap["id"], expect_absent=True)
    assert created["snapshot"] == snap["id"]

    # A snapshot a ref holds is kept in the bucket.
    with pytest.raises(vfsd.Conflict) as e:
        ca.delete_snapshot(snap["id"])
    assert name + "-new" in e.value.message
    cb.delete_ref(name + "-new")
    with pytest.raises(vfsd.NotFound):
        ca.ref(name + "-new")
    ca.delete_ref(name)
    cb.close_session(sid + "-ref", purge=True)
    ca.close_session(sid)


def test_keep_ref(fleet: Tuple[Daemon, Daemon]) -> None:
    a, b = fleet
    sid = "pyk-" + uuid.uuid4().hex[:6]
    a.client.create_session(id=sid, keep_ref=f"py/{sid}/head")
    a.client.call(sid, "write_file", {"path": "f", "content": "1"}).check()
    head = push_head(a.client, sid)
    assert b.client.ref(f"py/{sid}/head")["snapshot"] == head["id"], "the ref follows the head"
    s = a.client.update_session(sid, keep_ref="-")
    assert s["id"] == sid
    a.client.call(sid, "write_file", {"path": "f", "content": "2"}).check()
    push_head(a.client, sid)
    assert b.client.ref(f"py/{sid}/head")["snapshot"] == head["id"], "stopped following"
    with pytest.raises(ValueError):
        a.client.update_session(sid)
    a.client.close_session(sid)


def test_move_and_fenced(fleet: Tuple[Daemon, Daemon]) -> None:
    a, b = fleet
    sid = "pym-" + uuid.uuid4().hex[:6]
    a.client.create_session(id=sid)
    a.client.call(sid, "write_file", {"path": "f", "content": "moved\n"}).check()
    rep = a.client.move_session(sid, "py-b")
    assert rep["session"] == sid and rep["from"] == "py-a" and rep["to"] == "py-b" and rep["epoch"] >= 2
    assert {"freeze", "snapshot", "push"} <= set(rep["ms"]), rep["ms"]

    # The receiver adopts it at its first call; the sender is fenced.
    assert read(b.client, sid, "f") == "moved\n"
    owner = b.client.session(sid).get("owner")
    assert owner is not None and owner["daemon"] == "py-b"
    with pytest.raises(vfsd.Fenced) as e:
        a.client.call(sid, "write_file", {"path": "f", "content": "lost?\n"})
    assert e.value.code == "fenced" and e.value.status == 409 and "py-b" in e.value.message
    with pytest.raises(vfsd.Fenced):
        a.client.create_snapshot(sid)
    assert read(b.client, sid, "f") == "moved\n"

    # Moving it to a daemon that is not in the fleet is refused, and it stays.
    with pytest.raises(vfsd.APIError) as e2:
        b.client.move_session(sid, "no-such-daemon")
    assert e2.value.code in ("not_found", "invalid_input"), e2.value
    b.client.call(sid, "write_file", {"path": "g", "content": "still B's\n"}).check()
    b.client.close_session(sid)


def test_take_over(fleet: Tuple[Daemon, Daemon], vfsd_bin: str) -> None:
    a, b = fleet
    sid = "pyt-" + uuid.uuid4().hex[:6]
    b.client.create_session(id=sid)
    # A live owner is not taken over.
    with pytest.raises(vfsd.Conflict) as e:
        a.client.take_session(sid)
    assert "py-b" in e.value.message
    b.client.close_session(sid)


def test_take_over_a_dead_owner(fleet: Tuple[Daemon, Daemon], vfsd_bin: str) -> None:
    a, _ = fleet
    # A third daemon on the same bucket and prefix, killed without a word.
    c = Daemon(vfsd_bin, [x for x in a.extra if x not in ("--name", "py-a")] + ["--name", "py-c"])
    sid = "pyd-" + uuid.uuid4().hex[:6]
    try:
        c.client.create_session(id=sid)
        c.client.call(sid, "write_file", {"path": "f", "content": "pushed before the crash\n"}).check()
        push_head(c.client, sid)
    finally:
        c.kill()
    deadline = time.monotonic() + 30
    while True:
        try:
            s = a.client.take_session(sid)
            break
        except vfsd.Conflict:
            # The dead owner's lease (2 s, plus the skew) has not ended yet.
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
    owner = s.get("owner")
    assert owner is not None and owner["daemon"] == "py-a" and owner["epoch"] >= 2, owner
    assert read(a.client, sid, "f") == "pushed before the crash\n"
    a.client.close_session(sid)
