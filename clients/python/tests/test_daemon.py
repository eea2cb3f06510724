"""The daemon: health, metrics, MCP, the review page's login, unknown routes."""

from __future__ import annotations

import pytest

from conftest import Daemon, vfsd


def test_health_and_metrics(daemon: Daemon) -> None:
    h = daemon.client.health()
    assert h["status"] == "ok" and h["version"] and h["private"]["data_dir"] == str(daemon.data)
    m = daemon.client.metrics()
    assert "vfsd_sessions_open" in m and "vfsd_http_requests_total" in m
    with pytest.raises(vfsd.Unauthorized):
        daemon.tcp(token="").metrics()


def test_mcp(client: vfsd.Client, session: str, daemon: Daemon) -> None:
    tl = client.mcp(session, "tools/list")
    assert tl["id"] == 1 and "read_file" in [t["name"] for t in tl["result"]["tools"]]
    client.call(session, "write_file", {"path": "m.txt", "content": "over mcp\n"}).check()
    r = client.mcp(session, "tools/call", {"name": "read_file", "arguments": {"path": "m.txt"}}, request_id=7)
    assert r["id"] == 7 and r["result"]["structuredContent"]["inline_text"] == "over mcp\n"
    assert not r["result"].get("isError")
    minimal = client.mcp(session, "tools/list", profile="minimal")
    assert len(minimal["result"]["tools"]) < len(tl["result"]["tools"])
    with pytest.raises(vfsd.NotFound):
        client.mcp("no-such-session", "tools/list")
    # GET is refused (plain text 405): still an exception with the code.
    with pytest.raises(vfsd.MethodNotAllowed) as e:
        client._t.request("GET", f"/v1/sessions/{session}/mcp").read()
    assert e.value.status == 405


def test_ui_login(daemon: Daemon, sid: str) -> None:
    out = daemon.client.create_session(id=sid)
    try:
        admin = daemon.client.ui_login()
        assert admin["path"].startswith("/ui/login?code=") and admin["host"].endswith(".localhost")
        assert str(daemon.port) in admin["url"] and "session" not in admin
        mine = daemon.tcp(out["token"]).ui_login()
        assert mine["session"] == sid and mine["host"] != admin["host"]
        with pytest.raises(vfsd.Forbidden):
            daemon.tcp(out["token"]).ui_login(session="someone-else")
    finally:
        daemon.client.close_session(sid, purge=True)


def test_unknown_route(client: vfsd.Client) -> None:
    with pytest.raises(vfsd.NotFound) as e:
        client._t.request("GET", "/v1/nothing-here").read()
    assert "/v1" in e.value.message
    with pytest.raises(vfsd.MethodNotAllowed):
        client._t.request("PUT", "/v1/sessions").read()
