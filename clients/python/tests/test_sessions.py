"""Sessions: create (empty, from folders with globs, with progress), list, get, update, fork, reset, close."""

from __future__ import annotations

import pathlib
from typing import List

import pytest

from conftest import Daemon, vfsd


def test_create_empty_get_list_update_close(client: vfsd.Client, sid: str) -> None:
    out = client.create_session(id=sid, profile="openai", ttl="1h", label="an empty one")
    s = out["session"]
    assert s["id"] == sid and s["profile"] == "openai" and s["contract"] == "vfsd"
    assert s["label"] == "an empty one" and s["seq"] == 0 and s["bytes"] == 0
    assert out["token"].startswith("vfsd_sess_")
    assert "import" not in out
    assert client.session(sid)["uid"] == s["uid"]
    assert sid in [x["id"] for x in client.sessions()]

    assert "expires_at" in client.session(sid)
    assert "expires_at" not in client.update_session(sid, ttl="never")

    client.close_session(sid)
    with pytest.raises(vfsd.NotFound) as e:
        client.session(sid)
    assert e.value.code == "not_found" and e.value.status == 404 and sid in e.value.message


def test_create_from_folder_with_globs(client: vfsd.Client, sid: str, host_tree: pathlib.Path) -> None:
    seen: List[vfsd.Progress] = []
    out = client.create_session(id=sid, mounts=[vfsd.folder(str(host_tree), "/app", include=["**/*.py", "*.md"],
                                                            exclude=["src/util.py"])],
                                progress=seen.append)
    try:
        assert out["session"]["reset_restages"] is True
        imp = out["import"]
        assert imp["files"] == 2 and imp["mounts"][0]["mount_path"] == "/app"
        assert seen and {p["phase"] for p in seen} <= {"scan", "import"}
        paths = client.call(sid, "glob", {"pattern": "**"}).receipt["paths"]
        assert sorted(paths) == ["app/README.md", "app/src/main.py"]
    finally:
        client.close_session(sid, purge=True)


def test_create_errors_carry_codes(client: vfsd.Client, session: str, daemon: Daemon) -> None:
    with pytest.raises(vfsd.AlreadyExists) as e:
        client.create_session(id=session)
    assert e.value.code == "already_exists" and e.value.status == 409
    with pytest.raises(vfsd.InvalidInput) as e2:
        client.create_session(ttl="soon")
    assert e2.value.code == "invalid_input"
    with pytest.raises(vfsd.Forbidden) as e3:  # outside --allow-root
        client.create_session(mounts=[vfsd.folder("/etc")])
    assert e3.value.code == "forbidden"
    with pytest.raises(vfsd.InvalidPattern):
        client.create_session(mounts=[vfsd.folder(str(daemon.host), include=["[unclosed"])])
    with pytest.raises(vfsd.NotFound):
        client.create_session(base="ffffffff")
    # An unknown field is refused by name: bodies are decoded strictly.
    with pytest.raises(vfsd.InvalidInput) as e4:
        client.create_session(policy={"base": "default", "read_rots": ["src"]})
    assert "read_rots" in e4.value.message


def test_policy_object_and_quota(client: vfsd.Client, sid: str) -> None:
    out = client.create_session(id=sid, policy={"base": "default", "name": "src-only", "write_roots": ["src"]},
                                quota={"max_files": 50})
    try:
        s = out["session"]
        assert s["policy"] == "src-only" and s["effective_policy"]["write_roots"] == ["src"]
        assert s["quota"]["max_files"] == 50
        r = client.call(sid, "write_file", {"path": "elsewhere.txt", "content": "x"})
        assert not r.ok and r.status == "forbidden"
        assert client.call(sid, "write_file", {"path": "src/in.txt", "content": "x"}).ok
    finally:
        client.close_session(sid, purge=True)


def test_fork_and_reset(client: vfsd.Client, sid: str, host_tree: pathlib.Path) -> None:
    client.create_session(id=sid, mounts=[vfsd.folder(str(host_tree), "/")])
    fork_id = sid + "-f"
    try:
        client.call(sid, "write_file", {"path": "new.txt", "content": "mine\n"}).check()
        fork = client.fork_session(sid, new_id=fork_id, label="try something")
        assert fork["session"]["fork_of"] == sid and fork["token"]
        assert client.call(fork_id, "read_file", {"path": "new.txt"}).receipt["inline_text"] == "mine\n"

        # The host changes; a reset imports it again.
        (host_tree / "README.md").write_text("# App, changed\n")
        seen: List[vfsd.Progress] = []
        reset = client.reset_session(sid, progress=seen.append)
        assert "import" in reset and seen
        assert not client.call(sid, "exists", {"path": "new.txt"}).receipt["exists"]
        assert client.call(sid, "read_file", {"path": "README.md"}).receipt["inline_text"] == "# App, changed\n"
        assert client.reset_session(sid)["session"]["id"] == sid
    finally:
        client.close_session(fork_id, purge=True)
        client.close_session(sid, purge=True)


def test_session_token_forks_within_its_budget(daemon: Daemon, sid: str) -> None:
    out = daemon.client.create_session(id=sid, policy={"base": "default", "caps": {"max_forks": 1}})
    me = daemon.tcp(out["token"])
    try:
        with pytest.raises(vfsd.Forbidden):  # a session token may not name its fork
            me.fork_session(sid, new_id="mine")
        fork = me.fork_session(sid)
        with pytest.raises(vfsd.LimitExceeded) as e:
            me.fork_session(sid)
        assert e.value.code == "limit_exceeded" and e.value.status == 403
        daemon.client.close_session(fork["session"]["id"])
    finally:
        daemon.client.close_session(sid, purge=True)


def test_contract_state(client: vfsd.Client, session: str, sid: str, daemon: Daemon) -> None:
    with pytest.raises(vfsd.NotFound):  # the vfsd contract offers none
        client.contract_state(session)
    w = sid + "-wi"
    client.create_session(id=w, contract="weakincentives")
    try:
        client.call(w, "write_file", {"path": {"segments": ["a.md"]}, "content": "a"}).check()
        st = client.contract_state(w)
        assert [f["path"]["segments"] for f in st["files"]] == [["a.md"]]
    finally:
        client.close_session(w)
