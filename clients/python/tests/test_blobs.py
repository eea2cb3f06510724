"""Blobs: upload bytes and files, download whole and in ranges, use as write_file content; who may read."""

from __future__ import annotations

import io
import os
import tempfile

import pytest

from conftest import Daemon, vfsd


def test_blobs(client: vfsd.Client, session: str) -> None:
    data = os.urandom(300_000)
    b = client.put_blob(data)
    assert b["blob_ref"].startswith("blake3:") and b["size_bytes"] == len(data)
    assert client.get_blob(b["blob_ref"]) == data
    assert client.get_blob(b["blob_ref"], offset=10, length=5) == data[10:15]
    assert client.get_blob(b["blob_ref"].removeprefix("blake3:"), offset=299_990) == data[299_990:]

    with tempfile.TemporaryFile() as f:  # a file, sent as it is read
        f.write(b"file content\n")
        f.seek(0)
        fb = client.put_blob(f)
    assert client.get_blob(fb["blob_ref"]) == b"file content\n"
    sb = client.put_blob(io.BytesIO(b"streamed"))  # no size known: chunked
    assert sb["size_bytes"] == 8

    w = client.call(session, "write_file", {"path": "big.bin", "blob_ref": b["blob_ref"]}).check()
    assert w.receipt["size_bytes"] == len(data)
    r = client.call(session, "read_file", {"path": "big.bin", "offset_bytes": 0, "max_bytes": len(data)})
    assert r.receipt["blob"]["size_bytes"] == len(data)
    assert client.get_blob(r.receipt["blob"]["blob_ref"]) == data

    with pytest.raises(vfsd.InvalidInput):
        client.get_blob("not-a-ref")
    with pytest.raises(vfsd.NotFound):
        client.get_blob("blake3:" + "0" * 64)


def test_session_token_reads_its_own_blobs(daemon: Daemon, sid: str) -> None:
    other = sid + "-o"
    a = daemon.client.create_session(id=sid)
    b = daemon.client.create_session(id=other)
    try:
        mine, theirs = daemon.tcp(a["token"]), daemon.tcp(b["token"])
        ref = mine.put_blob(b"secret of a")["blob_ref"]
        assert mine.get_blob(ref) == b"secret of a"
        with pytest.raises(vfsd.NotFound):
            theirs.get_blob(ref)
        shared = daemon.tcp().put_blob(b"from the admin")["blob_ref"]
        assert theirs.get_blob(shared) == b"from the admin"
    finally:
        daemon.client.close_session(sid, purge=True)
        daemon.client.close_session(other, purge=True)
