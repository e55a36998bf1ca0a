"""The offline Pyodide packages: what set-up provides, the docs' list, and the checks
that decide whether requirements can be met with no network (host only, no browser)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ortweb.host.build.assets import find_assets
from ortweb.host.build.offline_packages import (
    PackageError,
    canonical_name,
    closure,
    read_offline,
)
from ortweb.host.build.requirements import parse_requirements_file, resolve_offline
from wheelmaker import make_wheel, tiny_wheels

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def pyodide_dir() -> Path:
    return find_assets().pyodide


@pytest.fixture(scope="module")
def lock(pyodide_dir: Path) -> dict:
    return json.loads((pyodide_dir / "pyodide-lock.json").read_text())


def test_offline_set_is_every_verified_package_and_the_readme_lists_it(pyodide_dir: Path) -> None:
    offline = read_offline(pyodide_dir)
    official_lock = json.loads((pyodide_dir / "pyodide-lock.official.json").read_text())
    official = official_lock["packages"]
    assert set(offline.available) | set(offline.unavailable) == set(official)
    assert {"numpy", "pandas", "scipy", "scikit-learn", "pillow", "matplotlib", "pyarrow",
            "micropip", "packaging"} <= set(offline.available)
    assert {"opencv-python", "shapely", "pyyaml", "regex"} <= set(offline.unavailable)
    for name, file_name in offline.available.items():
        assert (pyodide_dir / file_name).is_file(), name
    # The offline set is closed under dependencies.
    assert closure(official_lock, offline.available, offline.unavailable) == sorted(
        offline.available)
    # The docs' list is made from this list; the README's count is its length.
    from ortweb.host.docs.generated import generators

    listed = generators()["offline-packages"](None, ROOT)
    assert re.findall(r"`([^`]+)`", listed) == sorted(offline.available)
    readme = (ROOT / "README.md").read_text()
    count = re.search(r"beyond the (\d+) verified offline", readme)
    assert count and int(count.group(1)) == len(offline.available)
    assert f"The other {len(offline.unavailable)} are not." in listed


def test_closure_normalises_names_and_names_what_is_missing(lock: dict, pyodide_dir: Path
                                                            ) -> None:
    unavailable = read_offline(pyodide_dir).unavailable
    # The lock's depends say prompt_toolkit; its key is prompt-toolkit.
    assert "prompt-toolkit" in closure(lock, ["IPython"], unavailable)
    assert canonical_name("Prompt_Toolkit") == "prompt-toolkit"
    with pytest.raises(PackageError, match=r"'no-such-pkg' is not in Pyodide 0.27.7's lock"):
        closure(lock, ["no_such_pkg"])
    with pytest.raises(PackageError, match=r"'opencv-python' is not available offline"):
        closure(lock, ["opencv-python"], unavailable)


def test_resolve_orders_wheels_and_evaluates_markers(tmp_path: Path, lock: dict,
                                                     pyodide_dir: Path) -> None:
    unavailable = read_offline(pyodide_dir).unavailable
    pkg, dep = tiny_wheels(tmp_path)
    plan = resolve_offline([pkg, dep], ["scipy>=1.10"], lock, unavailable)
    assert [w.name for w in plan.wheels] == ["tinydep", "tinypkg"]
    assert {"numpy", "scipy", "openblas"} <= set(plan.lock_packages)
    assert "pywin32" not in plan.lock_packages  # its marker is false in Pyodide
    with pytest.raises(PackageError, match=r"'tinydep>=1' \(required by tinypkg 0.1.*neither"):
        resolve_offline([pkg], [], lock, unavailable)
    old = make_wheel(tmp_path / "old", "tinydep", "0.5")
    with pytest.raises(PackageError, match=r"tinydep-0.5-py3-none-any.whl does not satisfy >=1"):
        resolve_offline([pkg, old], [], lock, unavailable)
    # A direct URL would be fetched by micropip however it is set up: refused, for a
    # requirement given and for one a wheel declares.
    url = "numpy @ https://example.invalid/numpy-2.0.2-py3-none-any.whl"
    with pytest.raises(PackageError, match=r"direct URL .*example.invalid.* offline"):
        resolve_offline([], [url], lock, unavailable)
    via = make_wheel(tmp_path / "via", "viaurl", "0.1", [url])
    with pytest.raises(PackageError, match=r"required by viaurl 0.1.*direct URL"):
        resolve_offline([via], [], lock, unavailable)
    native = tmp_path / "fast-1.0-cp312-cp312-manylinux_2_17_x86_64.whl"
    native.write_bytes(b"")
    with pytest.raises(PackageError, match="built for 'manylinux_2_17_x86_64'"):
        resolve_offline([native], [], lock, unavailable)


def test_requirements_file(tmp_path: Path) -> None:
    pkg, _dep = tiny_wheels(tmp_path / "dist")
    req = tmp_path / "requirements.txt"
    req.write_text("# comment\n\ndist/tinypkg-0.1-py3-none-any.whl\nnumpy>=1  # inline\n")
    assert parse_requirements_file(req) == ([pkg.resolve()], ["numpy>=1"])
    req.write_text("numpy\nnot a requirement!\n")
    with pytest.raises(PackageError, match=r"requirements.txt:2: expected a wheel path"):
        parse_requirements_file(req)
    req.write_text("missing.whl\n")
    with pytest.raises(PackageError, match=r"requirements.txt:1: wheel 'missing.whl' not found"):
        parse_requirements_file(req)
