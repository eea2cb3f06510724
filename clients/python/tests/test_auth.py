"""Reaching the daemon: TCP with the admin token or a session's, without one, and not at all."""

from __future__ import annotations

import os

import pytest

from conftest import Daemon, free_port, vfsd


def test_tcp_admin_and_session_tokens(daemon: Daemon, sid: str) -> None:
    admin = daemon.tcp()
    out = admin.create_session(id=sid)
    other = sid + "-o"
    admin.create_session(id=other)
    try:
        me = daemon.tcp(out["token"])
        assert me.session(sid)["id"] == sid
        assert me.call(sid, "write_file", {"path": "a", "content": "x"}).ok
        with pytest.raises(vfsd.Forbidden) as e:  # another session
            me.session(other)
        assert e.value.code == "forbidden" and e.value.status == 403
        with pytest.raises(vfsd.Forbidden):  # the admin's routes
            me.sessions()
        with pytest.raises(vfsd.Forbidden):
            me.apply(sid)

        anonymous = daemon.tcp(token="")
        assert anonymous.health()["status"] == "ok"  # public
        assert "private" not in anonymous.health()
        with pytest.raises(vfsd.Unauthorized) as e2:
            anonymous.session(sid)
        assert e2.value.code == "unauthorized" and e2.value.status == 401
        with pytest.raises(vfsd.Unauthorized):
            daemon.tcp(token="vfsd_sess_forged").session(sid)

        # with_token: the same daemon, another principal.
        assert admin.with_token(out["token"]).session(sid)["id"] == sid
        assert "private" in admin.health() and admin.with_token("").health().get("private") is None
        assert daemon.client.with_token("ignored").sessions()  # the socket is the admin whatever the token
    finally:
        admin.close_session(sid, purge=True)
        admin.close_session(other, purge=True)


def test_unreachable_and_from_env(daemon: Daemon, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(vfsd.UnreachableError) as e:
        vfsd.Client(socket="/nonexistent/vfsd.sock", timeout=2).health()
    assert "/nonexistent/vfsd.sock" in str(e.value) and isinstance(e.value, ConnectionError)
    with pytest.raises(vfsd.UnreachableError):
        vfsd.Client(addr=f"127.0.0.1:{free_port()}", timeout=2).health()
    with pytest.raises(ValueError):
        vfsd.Client()

    monkeypatch.setenv("VFSD_ADDR", daemon.addr)
    monkeypatch.setenv("VFSD_TOKEN", daemon.token)
    assert vfsd.Client.from_env().where == f"http://{daemon.addr}"
    assert vfsd.Client.from_env().sessions() is not None
    monkeypatch.delenv("VFSD_ADDR")
    monkeypatch.setenv("VFSD_SOCKET", daemon.socket)
    assert vfsd.Client.from_env().health()["private"]["socket"] == daemon.socket
    monkeypatch.delenv("VFSD_SOCKET")
    monkeypatch.setenv("XDG_RUNTIME_DIR", os.path.dirname(daemon.socket))
    assert vfsd.Client.from_env().where == f"the socket {os.path.dirname(daemon.socket)}/vfsd.sock"
