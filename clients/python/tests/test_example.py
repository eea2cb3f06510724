"""The weakincentives orchestrator example runs against the daemon and does what it says."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid

from conftest import PKG, Daemon


def test_weakincentives_orchestrator(daemon: Daemon) -> None:
    docs = daemon.host / ("ex-" + uuid.uuid4().hex[:6]) / "docs"
    docs.mkdir(parents=True)
    (docs / "guide.md").write_text("# Guide\n\nRun make.\n")
    (docs / "skip.txt").write_text("not a HostMount match\n")
    env = dict(os.environ, VFSD_SOCKET=daemon.socket)
    env.pop("VFSD_ADDR", None)
    # The package as the tests import it (the source tree, or the installed one).
    import vfsd
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(vfsd.__file__))
    r = subprocess.run([sys.executable, str(PKG / "examples" / "weakincentives_orchestrator.py"),
                        "--docs", str(docs.relative_to(daemon.host)) + "/"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "turn 2 deleted the documentation: restored snapshot" in out
    assert "turn 3: read_file -> ToolValidationError" in out
    assert '"docs/guide.md": 1' in out and "skip.txt" not in out
    assert "turns undone: 1" in out
    # The session is gone, and with it its snapshots (the contract purges).
    sid = out.split()[1]
    assert sid not in [s["id"] for s in daemon.client.sessions()]
    assert daemon.client.snapshots(session=sid) == []
