"""History: the log, rewind (to a call, a position, a time, a snapshot; undone), rebase."""

from __future__ import annotations

import datetime as dt
import pathlib

import pytest

from conftest import vfsd


def test_log_and_rewind(client: vfsd.Client, session: str) -> None:
    s = session
    client.call(s, "write_file", {"path": "a.txt", "content": "1\n"}).check()
    snap = client.create_snapshot(s, label="one file")
    client.call(s, "write_file", {"path": "b.txt", "content": "2\n"}).check()
    client.call(s, "edit_file", {"path": "a.txt", "old_string": "1", "new_string": "one"}).check()

    log = client.log(s, patch=True)
    calls = [e for e in log["entries"] if e["kind"] == "call"]
    assert [e["tool"] for e in calls] == ["write_file", "write_file", "edit_file"]
    assert calls[2]["paths"] == ["a.txt"] and "+one" in calls[2]["diff"]
    assert log["seq"] == client.session(s)["seq"]
    assert client.log(s, offset=1, limit=1)["entries"][0] == client.log_all(s)["entries"][1]

    # Before call 3: a.txt back to "1", b.txt still there.
    back = client.rewind(s, call=3)
    assert back["to"] == calls[2]["seq_before"]
    assert client.call(s, "read_file", {"path": "a.txt"}).receipt["inline_text"] == "1\n"
    # A rewind is undone by rewinding to where it came from.
    client.rewind(s, seq=back["from"])
    assert client.call(s, "read_file", {"path": "a.txt"}).receipt["inline_text"] == "one\n"
    # To a snapshot of the session; to a time.
    client.rewind(s, snapshot=snap["id"])
    assert not client.call(s, "exists", {"path": "b.txt"}).receipt["exists"]
    client.rewind(s, time=dt.datetime.now(dt.timezone.utc))
    with pytest.raises(vfsd.InvalidInput):
        client.rewind(s)  # no target
    with pytest.raises(vfsd.NotFound):
        client.rewind(s, call=999)


def test_rebase(client: vfsd.Client, sid: str, host_tree: pathlib.Path) -> None:
    client.create_session(id=sid, mounts=[vfsd.folder(str(host_tree), "/")])
    try:
        client.call(sid, "write_file", {"path": "session-only.txt", "content": "s\n"}).check()
        (host_tree / "host-only.txt").write_text("h\n")
        dry = client.rebase(sid, dry_run=True)
        assert dry["dry_run"] and dry["taken"] == ["host-only.txt"] and dry["kept"] == ["session-only.txt"]
        assert not client.call(sid, "exists", {"path": "host-only.txt"}).receipt["exists"]
        real = client.rebase(sid)
        assert not real["dry_run"] and real["taken_count"] == 1 and real["import_snapshot"] != real["previous_import"]
        assert client.call(sid, "read_file", {"path": "host-only.txt"}).receipt["inline_text"] == "h\n"
    finally:
        client.close_session(sid, purge=True)


def test_rebase_needs_host_folders(client: vfsd.Client, session: str) -> None:
    with pytest.raises(vfsd.Conflict) as e:
        client.rebase(session)
    assert e.value.code == "conflict" and e.value.status == 409
