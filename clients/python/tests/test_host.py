"""Host folders: apply (dry run, real, conflicts) and mounts."""

from __future__ import annotations

import os
import pathlib
import shutil
import tempfile

import pytest

from conftest import need, vfsd


def test_apply(client: vfsd.Client, sid: str, host_tree: pathlib.Path) -> None:
    client.create_session(id=sid, mounts=[vfsd.folder(str(host_tree), "/")])
    try:
        client.call(sid, "edit_file", {"path": "src/main.py", "old_string": "hello", "new_string": "hi"}).check()
        client.call(sid, "write_file", {"path": "README.md", "content": "# Mine\n"}).check()
        (host_tree / "README.md").write_text("# Theirs\n")  # the host changed it meanwhile

        dry = client.apply(sid, dry_run=True)
        assert dry["dry_run"] and [c["path"] for c in dry["applied"]] == ["/src/main.py"]
        assert (host_tree / "src" / "main.py").read_text() == "print('hello')\n"

        rep = client.apply(sid)
        assert [c["path"] for c in rep["applied"]] == ["/src/main.py"] and rep["applied"][0]["action"] == "write"
        assert [c["path"] for c in rep["conflicts"]] == ["/README.md"] and rep["conflicts"][0]["conflict"]
        assert rep["import_snapshot"]
        assert (host_tree / "src" / "main.py").read_text() == "print('hi')\n"
        assert (host_tree / "README.md").read_text() == "# Theirs\n"
    finally:
        client.close_session(sid, purge=True)


def test_apply_needs_host_folders(client: vfsd.Client, session: str) -> None:
    with pytest.raises(vfsd.Conflict):
        client.apply(session)


def test_mount(client: vfsd.Client, session: str) -> None:
    need(os.path.exists("/dev/fuse") and shutil.which("fusermount3") is not None, "FUSE (/dev/fuse, fusermount3)")
    client.call(session, "write_file", {"path": "seen.txt", "content": "through the mount\n"}).check()
    d = tempfile.mkdtemp(prefix="vfsd-py-mnt-")
    try:
        m = client.mount(session, d, read_only=True)
        assert m["dir"] == d and m.get("read_only") is True
        assert client.session(session)["fuse_mounts"][0]["dir"] == d
        assert pathlib.Path(d, "seen.txt").read_text() == "through the mount\n"
        with pytest.raises(vfsd.Conflict):
            client.mount(session, d)
        client.unmount(session, d)
        assert not os.listdir(d)
        assert "fuse_mounts" not in client.session(session)
    finally:
        try:
            client.unmount(session)
        except vfsd.APIError:
            pass
        os.rmdir(d)
    with pytest.raises(vfsd.InvalidInput):
        client.mount(session, "relative/dir")
