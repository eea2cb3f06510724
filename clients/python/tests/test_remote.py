"""The remote store: status and errors without one; push, status and GC with one (an S3 server)."""

from __future__ import annotations

import uuid

import pytest

from conftest import Daemon, need, s3_url, vfsd


def test_without_a_remote(client: vfsd.Client, session: str) -> None:
    st = client.remote_status()
    assert "url" not in st and st["pending"] == []
    with pytest.raises(vfsd.Unavailable) as e:
        client.remote_gc()
    assert e.value.code == "unavailable" and e.value.status == 503
    snap = client.create_snapshot(session)
    with pytest.raises(vfsd.Unavailable):
        client.push_snapshot(snap["id"])


def test_with_a_remote(vfsd_bin: str) -> None:
    url = s3_url("pyclient-" + uuid.uuid4().hex[:8])
    need(url is not None, "an S3-compatible server (VFSD_S3_TEST_URL, as the Go tests take it)")
    assert url is not None
    d = Daemon(vfsd_bin, ["--remote", url])
    try:
        c = d.client
        sid = "remote-" + uuid.uuid4().hex[:6]
        c.create_session(id=sid)
        c.call(sid, "write_file", {"path": "a.txt", "content": "to the bucket\n"}).check()
        snap = c.create_snapshot(sid)
        rep = c.push_snapshot(snap["id"])
        assert rep["snapshot"] == snap["id"] and rep["blobs"] >= 1
        st = c.remote_status()
        assert st["url"] and st["uploaded"] >= 1
        gc = c.remote_gc()
        assert gc["snapshots"] >= 1 and gc["grace_s"] > 0
        c.close_session(sid, purge=True)
    finally:
        d.stop()
