"""`pip install ./clients/python` works offline, in a fresh virtual environment without system packages."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import venv

from conftest import PKG, need


def test_pip_install_offline() -> None:
    need(shutil.which("python3") is not None, "python3")
    d = tempfile.mkdtemp(prefix="vfsd-py-venv-")
    try:
        try:
            venv.EnvBuilder(with_pip=True, system_site_packages=False).create(d)
        except (subprocess.CalledProcessError, OSError) as e:
            need(False, f"python3 -m venv with pip (Debian: python3-venv): {e}")
        py = os.path.join(d, "bin", "python")
        env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("PIP_FIND_LINKS", None)
        for args in ([str(PKG)], ["-e", str(PKG)]):
            r = subprocess.run([py, "-m", "pip", "install", "--quiet", *args], capture_output=True, text=True,
                               timeout=300, env=env, cwd=d)
            assert r.returncode == 0, r.stdout + r.stderr
            r = subprocess.run([py, "-c", "import vfsd, pathlib; print(vfsd.__file__); "
                                "assert (pathlib.Path(vfsd.__file__).parent / 'py.typed').exists(); "
                                "vfsd.Client(socket='/x').where"], capture_output=True, text=True, timeout=60, cwd=d)
            assert r.returncode == 0, r.stderr
            where = r.stdout.strip()
            if args[0] == "-e":
                assert where.startswith(str(PKG / "src")), where
            else:
                assert where.startswith(d), where
        # No build output is left in the source tree.
        assert not list(PKG.glob("*.egg-info")) and not (PKG / "build").exists()
    finally:
        shutil.rmtree(d, ignore_errors=True)
    assert sys.version_info >= (3, 9)
