"""Fixtures: a real `vfsd serve` (Unix socket and TCP), built from this repository.

Environment:
  VFSD_BIN                    a vfsd binary to use (default: go build ./cmd/vfsd once per run)
  VFSD_TEST_INSTALLED=1       test the installed package (pip install ./clients/python), not src/
  VFSD_CLIENT_TESTS_STRICT=1  a test that would skip (no FUSE, no S3 server) fails instead: CI
  VFSD_S3_TEST_URL            an S3-compatible bucket for the remote tests (as the Go tests take it)
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import uuid
from typing import Iterator, List, Optional

import pytest

HERE = pathlib.Path(__file__).resolve().parent
PKG = HERE.parent
REPO = PKG.parent.parent

if os.environ.get("VFSD_TEST_INSTALLED") == "1":
    import vfsd  # noqa: E402

    if pathlib.Path(vfsd.__file__).resolve().is_relative_to(PKG / "src"):
        raise RuntimeError(f"VFSD_TEST_INSTALLED=1 but vfsd comes from the source tree: {vfsd.__file__}")
else:
    sys.path.insert(0, str(PKG / "src"))
    import vfsd  # noqa: E402

STRICT = os.environ.get("VFSD_CLIENT_TESTS_STRICT") == "1"


def need(ok: bool, why: str) -> None:
    """Skip the test unless ok — or, in CI (VFSD_CLIENT_TESTS_STRICT=1), fail:
    nothing is skipped silently there."""
    if ok:
        return
    if STRICT:
        pytest.fail(f"needed in CI (VFSD_CLIENT_TESTS_STRICT=1): {why}")
    pytest.skip(why)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="session")
def vfsd_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    given = os.environ.get("VFSD_BIN")
    if given:
        return given
    out = tmp_path_factory.mktemp("bin") / "vfsd"
    go = shutil.which("go") or "/usr/local/go/bin/go"
    subprocess.run([go, "build", "-o", str(out), "./cmd/vfsd"], cwd=REPO, check=True, timeout=900)
    return str(out)


class Daemon:
    """A `vfsd serve` of its own: data directory, socket, TCP port, and a
    host directory it may stage (--allow-root)."""

    def __init__(self, binary: str, extra: Optional[List[str]] = None) -> None:
        # Unix socket paths are short (108 bytes): a directory under /tmp.
        self.extra = list(extra or [])
        self.dir = pathlib.Path(tempfile.mkdtemp(prefix="vfsd-py-", dir="/tmp"))
        self.data = self.dir / "data"
        self.host = self.dir / "host"
        self.host.mkdir()
        self.socket = str(self.dir / "vfsd.sock")
        self.port = free_port()
        self.addr = f"127.0.0.1:{self.port}"
        self.log = open(self.dir / "daemon.log", "wb")
        self.proc = subprocess.Popen(
            [binary, "serve", "--data-dir", str(self.data), "--socket", self.socket, "--listen", self.addr,
             "--allow-root", str(self.host), "--log-level", "warn"] + (extra or []),
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.client = vfsd.Client(socket=self.socket, timeout=30)
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"vfsd serve exited with {self.proc.returncode}:\n{self.logs()}")
            try:
                self.client.health(timeout=2)
                break
            except (vfsd.UnreachableError, TimeoutError):
                if time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"vfsd serve did not answer within 30 s:\n{self.logs()}")
                time.sleep(0.05)
        self.token = (self.data / "token").read_text().strip()

    def logs(self) -> str:
        self.log.flush()
        return (self.dir / "daemon.log").read_text(errors="replace")[-4000:]

    def tcp(self, token: Optional[str] = None) -> "vfsd.Client":
        """A client over TCP with token (default: the admin token)."""
        return vfsd.Client(addr=self.addr, token=self.token if token is None else token, timeout=30)

    def kill(self) -> None:
        """Kill the daemon with SIGKILL, as a crash would, and remove its
        directory (a killed daemon must hold no FUSE mount: use it only
        for daemons whose sessions mount nothing)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def stop(self) -> None:
        """Stop the daemon; raise if it did not exit cleanly (a crash, or a
        data race the race detector reported, when VFSD_BIN is built with
        -race as CI builds it)."""
        killed = False
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
                killed = True
        logs = self.logs()
        self.log.close()
        # FUSE mounts are unmounted by the daemon on shutdown; whatever is
        # left (a test that failed half-way) must not stop the cleanup.
        shutil.rmtree(self.dir, ignore_errors=True)
        if killed or self.proc.returncode != 0:
            raise RuntimeError(f"vfsd serve exited with {self.proc.returncode}{' (killed: it did not stop on SIGTERM)' if killed else ''}:\n{logs}")


@pytest.fixture(scope="session")
def daemon(vfsd_bin: str) -> Iterator[Daemon]:
    d = Daemon(vfsd_bin)
    yield d
    d.stop()


@pytest.fixture
def client(daemon: Daemon) -> "vfsd.Client":
    """The admin, over the socket."""
    return daemon.client


@pytest.fixture
def sid() -> str:
    """A fresh session ID."""
    return "py-" + uuid.uuid4().hex[:12]


@pytest.fixture
def session(client: "vfsd.Client", sid: str) -> Iterator[str]:
    """An empty session, closed after the test."""
    client.create_session(id=sid, ttl="1h")
    yield sid
    try:
        client.close_session(sid, purge=True)
    except vfsd.NotFound:
        pass


@pytest.fixture
def host_tree(daemon: Daemon) -> Iterator[pathlib.Path]:
    """A fresh host folder beneath the daemon's allowed root."""
    d = daemon.host / uuid.uuid4().hex[:8]
    (d / "src").mkdir(parents=True)
    (d / "src" / "main.py").write_text("print('hello')\n")
    (d / "src" / "util.py").write_text("X = 1\n")
    (d / "build.log").write_text("noise\n")
    (d / "README.md").write_text("# App\n")
    yield d
    shutil.rmtree(d, ignore_errors=True)


def s3_url(prefix: str) -> Optional[str]:
    """VFSD_S3_TEST_URL with a prefix of its own under the bucket."""
    base = os.environ.get("VFSD_S3_TEST_URL")
    if not base:
        return None
    u = urllib.parse.urlsplit(base)
    path = (u.path.rstrip("/") + "/" + prefix).lstrip("/")
    return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + path, u.query, u.fragment))
