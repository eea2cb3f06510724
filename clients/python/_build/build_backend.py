"""A PEP 517 build backend for the vfsd package, with the standard library only.

Why not setuptools: ``pip install ./clients/python`` builds in an isolated
environment and first installs the backend the project names from the
package index, which these machines cannot reach; Debian's setuptools 66
would also need ``wheel``. This backend needs nothing (``requires = []``),
so pip builds the package offline, in any virtual environment, with any pip
that knows PEP 517 (19+). It writes a pure-Python wheel of ``src/vfsd``,
an sdist, and (PEP 660) an editable wheel.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import pathlib
import re
import tarfile
import time
import zipfile
from typing import Any, Dict, List, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent
SRC = ROOT / "src"
PACKAGE = "vfsd"


def _project() -> Dict[str, Any]:
    """The [project] table of pyproject.toml (tomllib on 3.11+, else the
    flat subset this file uses: key = "string" and key = ["list"])."""
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:
        out: Dict[str, Any] = {}
        section = ""
        for line in text.splitlines():
            line = line.strip()
            if line.startswith("["):
                section = line.strip("[]").strip()
                continue
            m = re.match(r'^([A-Za-z0-9_-]+)\s*=\s*(.+)$', line)
            if section == "project" and m:
                key, value = m.group(1), m.group(2).strip()
                if value.startswith('"'):
                    out[key] = value.strip('"')
                elif value.startswith("["):
                    out[key] = re.findall(r'"([^"]*)"', value)
        return out
    return dict(tomllib.loads(text)["project"])


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}"]
    if p.get("description"):
        lines.append(f"Summary: {p['description']}")
    if p.get("requires-python"):
        lines.append(f"Requires-Python: {p['requires-python']}")
    for c in p.get("classifiers", []):
        lines.append(f"Classifier: {c}")
    for d in p.get("dependencies", []):
        lines.append(f"Requires-Dist: {d}")
    readme = p.get("readme")
    body = ""
    if isinstance(readme, str) and (ROOT / readme).exists():
        lines.append("Description-Content-Type: text/markdown")
        body = "\n" + (ROOT / readme).read_text(encoding="utf-8")
    return "\n".join(lines) + "\n" + body


def _dist_info() -> str:
    p = _project()
    return f"{p['name'].replace('-', '_')}-{p['version']}.dist-info"


def _wheel_name() -> str:
    p = _project()
    return f"{p['name'].replace('-', '_')}-{p['version']}-py3-none-any.whl"


def _package_files() -> List[Tuple[str, bytes]]:
    out = []
    for path in sorted((SRC / PACKAGE).rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".typed"):
            out.append((path.relative_to(SRC).as_posix(), path.read_bytes()))
    return out


def _write_wheel(directory: str, files: List[Tuple[str, bytes]]) -> str:
    info = _dist_info()
    files = files + [
        (f"{info}/METADATA", _metadata().encode("utf-8")),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: vfsd build_backend\nRoot-Is-Purelib: true\nTag: py3-none-any\n"),
        (f"{info}/top_level.txt", f"{PACKAGE}\n".encode("utf-8")),
    ]
    record = []
    name = _wheel_name()
    # Reproducible: fixed timestamps (SOURCE_DATE_EPOCH when set).
    stamp = time.gmtime(int(os.environ.get("SOURCE_DATE_EPOCH", "315532800")))[:6]
    with zipfile.ZipFile(os.path.join(directory, name), "w", zipfile.ZIP_DEFLATED) as zf:
        for arc, data in files:
            zi = zipfile.ZipInfo(arc, date_time=stamp)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{arc},sha256={digest},{len(data)}")
        record.append(f"{info}/RECORD,,")
        zi = zipfile.ZipInfo(f"{info}/RECORD", date_time=stamp)
        zi.external_attr = 0o644 << 16
        zf.writestr(zi, "\n".join(record) + "\n")
    return name


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_sdist(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def get_requires_for_build_editable(config_settings: Optional[Dict[str, Any]] = None) -> List[str]:
    return []


def prepare_metadata_for_build_wheel(metadata_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    info = _dist_info()
    d = pathlib.Path(metadata_directory) / info
    d.mkdir(parents=True, exist_ok=True)
    (d / "METADATA").write_text(_metadata(), encoding="utf-8")
    return info


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                metadata_directory: Optional[str] = None) -> str:
    return _write_wheel(wheel_directory, _package_files())


def build_editable(wheel_directory: str, config_settings: Optional[Dict[str, Any]] = None,
                   metadata_directory: Optional[str] = None) -> str:
    # A .pth file puts src/ on sys.path: edits take effect without reinstalling.
    return _write_wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", (str(SRC) + "\n").encode("utf-8"))])


def build_sdist(sdist_directory: str, config_settings: Optional[Dict[str, Any]] = None) -> str:
    p = _project()
    base = f"{p['name'].replace('-', '_')}-{p['version']}"
    name = base + ".tar.gz"
    members = ["pyproject.toml", "README.md"]
    for sub in ("_build", "src", "scripts", "tests", "examples"):
        for path in sorted((ROOT / sub).rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(".pyc"):
                members.append(path.relative_to(ROOT).as_posix())
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for m in members:
            data = (ROOT / m).read_bytes()
            ti = tarfile.TarInfo(f"{base}/{m}")
            ti.size, ti.mode, ti.mtime = len(data), 0o644, 315532800
            tf.addfile(ti, io.BytesIO(data))
        pkg = _metadata().encode("utf-8")
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size, ti.mode, ti.mtime = len(pkg), 0o644, 315532800
        tf.addfile(ti, io.BytesIO(pkg))
    return name
