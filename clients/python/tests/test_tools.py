"""Tools: the list in each profile, typed receipts of every vfsd tool, failures as receipts, the call log."""

from __future__ import annotations

import pytest

from conftest import Daemon, vfsd


def test_tool_list_profiles(client: vfsd.Client, session: str) -> None:
    tl = client.tools(session)
    assert tl["profile"] == "anthropic" and tl["contract"] == "vfsd" and "## " in tl["prompt"]
    names = {t["name"] for t in tl["tools"]}
    assert names <= set(vfsd.VFSD_TOOLS) and "read_file" in names
    openai = client.tools(session, profile="openai")
    assert openai["tools"][0]["type"] == "function"
    gemini = client.tools(session, profile="gemini")
    assert "functionDeclarations" in gemini["tools"] or "functionDeclarations" in gemini["tools"][0]
    with pytest.raises(vfsd.InvalidInput):
        client.tools(session, profile="nope")


def test_every_vfsd_tool_returns_its_receipt(client: vfsd.Client, session: str) -> None:
    s = session
    w = client.call(s, "write_file", {"path": "src/a.py", "content": "def f():\n    return 1\n"}).check()
    assert w.ok and w.status == "ok" and w.contract == "vfsd" and w.receipt["created"] is True
    assert w.receipt["version"] >= 1 and w.receipt["size_bytes"] == 22

    r = client.call(s, "read_file", {"path": "src/a.py"})
    assert r.receipt["inline_text"].startswith("def f") and r.receipt["total_lines"] == 2

    e = client.call(s, "edit_file", {"path": "src/a.py", "old_string": "return 1", "new_string": "return 2"})
    assert e.receipt["replacements"] == 1 and "+    return 2" in e.receipt["diff"]

    g = client.call(s, "grep", {"pattern": "return", "path": "src"})
    assert g.receipt["matches"][0]["path"] == "src/a.py" and g.receipt["matches"][0]["line"] == 2

    assert client.call(s, "glob", {"pattern": "**/*.py"}).receipt["paths"] == ["src/a.py"]
    ls = client.call(s, "list_directory", {"path": "src"})
    assert [x["path"] for x in ls.receipt["entries"]] == ["src/a.py"]
    assert client.call(s, "stat", {"path": "src/a.py"}).receipt["kind"] == "file"
    assert client.call(s, "exists", {"path": "src/a.py"}).receipt["exists"] is True
    assert client.call(s, "mkdir", {"path": "docs/x"}).receipt["created"] is True
    mv = client.call(s, "rename", {"from": "src/a.py", "to": "src/b.py"})
    assert mv.receipt["from"] == "src/a.py" and mv.receipt["to"] == "src/b.py"
    patch = "*** Begin Patch\n*** Add File: docs/x/n.md\n+note\n*** End Patch\n"
    p = client.call(s, "apply_patch", {"patch": patch})
    assert p.receipt["files_changed"] == 1 and p.receipt["ops"]["add"] == 1
    d = client.call(s, "delete_file", {"path": "docs", "recursive": True})
    assert d.receipt["deleted"] is True and d.receipt["removed"] == 3


def test_a_refusal_is_a_receipt(client: vfsd.Client, session: str) -> None:
    r = client.call(session, "read_file", {"path": "missing.txt"})
    assert not r.ok and r.is_error and r.status == "not_found" and r.error_code == "not_found"
    assert r.failure is not None and "does not exist" in r.failure["summary_text"]
    with pytest.raises(vfsd.ToolError) as e:
        r.check()
    assert e.value.code == "not_found" and e.value.tool == "read_file"
    u = client.call(session, "no_such_tool", {})
    assert not u.ok and u.error_code == "unknown_tool"


def test_text_and_contract(client: vfsd.Client, session: str) -> None:
    client.call(session, "write_file", {"path": "t.txt", "content": "one\ntwo\n"}).check()
    r = client.call(session, "read_file", {"path": "t.txt"}, text=True)
    assert r.text is not None and "two" in r.text and r.receipt["inline_text"] == "one\ntwo\n"
    assert client.call(session, "exists", {"path": "t.txt"}, contract="vfsd").ok
    with pytest.raises(vfsd.InvalidInput) as e:
        client.call(session, "exists", {"path": "t.txt"}, contract="x07")
    assert "x07" in e.value.message


def test_call_log_pages(client: vfsd.Client, session: str) -> None:
    for i in range(5):
        client.call(session, "write_file", {"path": f"f{i}.txt", "content": str(i)}).check()
    page = client.calls(session, limit=2)
    assert [c["n"] for c in page["calls"]] == [1, 2] and page["next"] == 2
    rest = client.calls(session, since=page["next"])
    assert [c["n"] for c in rest["calls"]] == [3, 4, 5] and "next" not in rest
    c = rest["calls"][0]
    assert c["tool"] == "write_file" and c["transport"] == "http" and c["params"]["path"] == "f2.txt"
    assert c["seq"] > c["seq_before"]


def test_checkpoint_tools(daemon: Daemon, sid: str) -> None:
    c = daemon.client
    off = c.create_session(id=sid + "-off")
    r = daemon.tcp(off["token"]).call(sid + "-off", "checkpoint", {"label": "x"})
    assert r.error_code == "forbidden" and "checkpoints is true" in r.receipt["summary_text"]
    c.close_session(sid + "-off", purge=True)

    on = c.create_session(id=sid, policy={"base": "default", "checkpoints": True}, quota={"max_snapshots": 1})
    agent = daemon.tcp(on["token"])
    agent.call(sid, "write_file", {"path": "a.txt", "content": "one\n"}).check()
    cp = agent.call(sid, "checkpoint", {"label": "a.txt written"}).check().receipt["checkpoint"]
    agent.call(sid, "write_file", {"path": "a.txt", "content": "broken\n"}).check()
    assert [x["label"] for x in agent.call(sid, "list_checkpoints", {}).check().receipt["checkpoints"] or []] == \
        ["a.txt written"]
    d = agent.call(sid, "diff_since", {"checkpoint": cp["id"][:12]}).check().receipt
    assert d["modified"] == 1 and "+broken" in d["diff"]
    agent.call(sid, "undo_to", {"checkpoint": cp["id"][:12]}).check()
    assert agent.call(sid, "read_file", {"path": "a.txt"}).receipt["inline_text"] == "one\n"
    over = agent.call(sid, "checkpoint", {"label": "past the quota"})
    assert over.error_code == "too_large"
    c.close_session(sid, purge=True)
