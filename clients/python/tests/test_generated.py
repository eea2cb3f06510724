"""The wire types are the OpenAPI description's: the generated modules are up to date, and cover the tools."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import PKG, REPO, vfsd


def test_generated_types_are_fresh() -> None:
    r = subprocess.run([sys.executable, str(PKG / "scripts" / "gen_types.py"), "--check"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_tools_and_codes_are_the_descriptions() -> None:
    spec = json.loads((REPO / "api" / "openapi.json").read_text())
    assert sorted(spec["x-vfsd-tools"]) == sorted(vfsd.VFSD_TOOLS)
    codes = spec["components"]["schemas"]["ErrorCode"]["enum"]
    for code in codes:
        err = vfsd.error_for(code, "m", spec["components"]["schemas"]["ErrorCode"]["x-vfsd-status"][code])
        assert type(err) is not vfsd.APIError, f"no exception class for {code}"
        assert err.code == code and isinstance(err, vfsd.APIError)
    assert type(vfsd.error_for("a_code_from_the_future", "m")) is vfsd.APIError
    for name in spec["components"]["schemas"]:
        assert hasattr(vfsd, name), f"vfsd.{name} is missing"
