"""The environment the tests run in is the locked one: every package of
requirements/constraints.txt is installed at exactly its version (`make lock`)."""

from __future__ import annotations

import importlib.metadata
import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
CONSTRAINTS = ROOT / "requirements" / "constraints.txt"


def _locked() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        name, version = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", line).groups()  # type: ignore[union-attr]
        pins[canonicalize_name(name)] = version
    return pins


def test_every_locked_package_is_installed_at_its_version() -> None:
    installed = {
        canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()
    }
    locked = _locked()
    assert len(locked) > 100
    wrong = {
        name: (version, installed.get(name))
        for name, version in locked.items()
        if installed.get(name) != version
    }
    assert wrong == {}, "installed versions differ from the lock: run `make install`"


def test_every_dependency_of_pyproject_is_locked() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wanted = list(project["dependencies"])
    for extra in ("dev", "bench"):
        wanted += project["optional-dependencies"][extra]
    locked = _locked()
    missing = []
    for spec in wanted:
        requirement = Requirement(spec)
        version = locked.get(canonicalize_name(requirement.name))
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            missing.append((spec, version))
    assert missing == [], "pyproject.toml and the lock disagree: run `make lock`"
