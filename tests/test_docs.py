"""The docs site: `python3 build.py docs` builds with no warnings, fails on what it must
refuse (a broken link or anchor, a public name without a docstring, an unknown
generated part), and its live example runs in Chromium, offline, equal to native
onnxruntime. The README is short and its figures are those of the kept bench runs.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from ortweb.host.bench.report import _fmt
from ortweb.host.docs.api_check import missing_docstrings
from ortweb.host.docs.build import build_docs, run_mkdocs
from ortweb.host.docs.generated import GeneratedError, expand
from ortweb.host.docs.live import live_model
from ortweb.host.serve import StaticServer
from ortweb.host.sitepage import SiteContext

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("docs") / "site"
    assert build_docs(out) == 0
    return out


def _strip_docstring(path: Path, marker: str) -> None:
    """Remove the first docstring after ``marker`` in ``path``."""
    text = path.read_text()
    start = text.index('"""', text.index(marker))
    end = text.index('"""', start + 3) + 3
    path.write_text(text[:start] + "pass" + text[end:])


def _copy_docs(tmp_path: Path) -> Path:
    """A copy of docs/ whose config points at this checkout's code; its mkdocs.yml."""
    copy = tmp_path / "docs"
    shutil.copytree(DOCS, copy)
    config = copy / "mkdocs.yml"
    text = config.read_text().replace("../py/", f"{ROOT}/py/").replace("[../py]", f"[{ROOT}/py]")
    config.write_text(text)
    return config


def _mkdocs(config: Path, out: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return run_mkdocs(config, out, env=env, capture=True, timeout=300)


def test_the_docs_build_every_page_and_the_references(built: Path) -> None:
    for page in ("index", "sites", "notebooks", "testing", "cli", "onnxruntime", "engines",
                 "iobinding", "loading-models", "benchmarks", "development"):
        assert (built / f"{page}.html").is_file(), page
    api = (built / "reference" / "python.html").read_text()
    import ortweb
    import ortweb.testing

    for name in ortweb.__all__:
        if not name.startswith("_"):  # __version__: a constant, not in the reference
            assert f'id="ortweb.{name}"' in api, name
    testing = (built / "reference" / "testing.html").read_text()
    for name in ortweb.testing.__all__:
        assert f'id="ortweb.testing.{name}"' in testing, name
    cli = (built / "reference" / "cli.html").read_text()
    for command in ("run", "exec", "site", "demo", "lite", "conformance", "bench", "serve"):
        assert f'id="ortweb-{command}"' in cli, command
    assert "--compare-native" in cli
    # Generated from the kept runs, not typed: the engines table and the bench tables.
    assert "refused (Softmax)" in (built / "engines.html").read_text()
    bench = (built / "benchmarks.html").read_text()
    latest = json.loads((DOCS / "bench" / "latest.json").read_text())
    assert latest["meta"]["date"] in bench
    # The getting-started page's byte counts are those of the live site it publishes.
    first = json.loads((built / "live" / "ortweb-manifest.json").read_text())["first_visit"]
    said = re.search(r"downloads ([\d.]+) MB with brotli \(([\d.]+) MB uncompressed, (\d+) "
                     r"files", (built / "index.html").read_text())
    assert said, "the getting-started page no longer says what the live example downloads"
    assert said.groups() == (f"{first['br'] / 1e6:.1f}", f"{first['raw'] / 1e6:.1f}",
                             str(first["files"])), (said.groups(), first)


def test_a_broken_link_or_anchor_fails_the_build_by_file(tmp_path: Path) -> None:
    config = _copy_docs(tmp_path)
    page = config.parent / "pages" / "iobinding.md"
    original = page.read_text()
    page.write_text(original + "\nSee [nowhere](no-such-page.md).\n")
    done = _mkdocs(config, tmp_path / "out")
    assert done.returncode != 0
    assert "iobinding.md" in done.stderr and "no-such-page.md" in done.stderr
    page.write_text(original + "\nSee [the drop-in](onnxruntime.md#no-such-anchor).\n")
    done = _mkdocs(config, tmp_path / "out")
    assert done.returncode != 0 and "no-such-anchor" in done.stderr


def test_an_unknown_generated_part_fails_by_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(GeneratedError, match=r"^docs/pages/x\.md:3: no generated part 'nope'"):
        expand("a\n\n<!-- generated: nope -->\n", ROOT, "docs/pages/x.md")
    config = _copy_docs(tmp_path)
    page = config.parent / "pages" / "packages.md"
    page.write_text(page.read_text() + "\n<!-- generated: bench no-such-run -->\n")
    done = _mkdocs(config, tmp_path / "out")
    assert done.returncode != 0 and "packages.md" in done.stderr
    assert "no-such-run.json" in done.stderr


def test_a_public_name_without_a_docstring_fails_the_build(tmp_path: Path) -> None:
    py = tmp_path / "py"
    shutil.copytree(ROOT / "py" / "ortweb", py / "ortweb",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert missing_docstrings(py) == []
    _strip_docstring(py / "ortweb" / "_cache.py", "def clear_cache(")
    found = missing_docstrings(py)
    assert len(found) == 1 and found[0].endswith("ortweb.clear_cache has no docstring")
    assert re.match(r"^py/ortweb/_cache\.py:\d+: ", found[0]), found
    done = _mkdocs(_copy_docs(tmp_path), tmp_path / "out", ORTWEB_DOCS_PY=str(py))
    assert done.returncode != 0 and "ortweb.clear_cache has no docstring" in done.stderr


def test_a_public_method_without_a_docstring_is_named(tmp_path: Path) -> None:
    py = tmp_path / "py"
    shutil.copytree(ROOT / "py" / "ortweb", py / "ortweb",
                    ignore=shutil.ignore_patterns("__pycache__"))
    # Defined on the base class: inherited methods count as the class's own.
    _strip_docstring(py / "ortweb" / "_session_base.py", "    def get_inputs(")
    assert any(p.endswith("ortweb.InferenceSession.get_inputs has no docstring")
               for p in missing_docstrings(py))


@pytest.fixture(scope="module")
def docs_server(built: Path) -> Iterator[StaticServer]:
    with StaticServer(built) as server:
        yield server


@pytest.mark.browser
def test_the_live_example_runs_offline_and_equals_native(ortweb_runtime, docs_server) -> None:
    rows = np.random.default_rng(3).standard_normal((5, 8)).astype(np.float32)
    native = ort.InferenceSession(live_model(), providers=["CPUExecutionProvider"])
    expected = native.run(None, {"x": rows})[0]
    with SiteContext(ortweb_runtime.browser, docs_server.url) as ctx:
        with ctx.open(f"{docs_server.url}/live/index.html") as page:
            got = np.asarray(page.call("classify", rows.tolist()), np.float32)
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
            first = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
            shown = native.run(None, {"x": first})[0].round(4).tolist()
            assert f"probabilities: {shown} on wasm" in page.output()
            assert not page.errors
        # The getting-started page embeds it: the frame runs the script too.
        with ctx.open(f"{docs_server.url}/index.html", wait=False) as page:
            frame = page.page.frame_locator("iframe[title='ortweb live example']")
            console = frame.locator("#ortweb-console")
            console.filter(has_text="probabilities:").wait_for(timeout=120_000)
            assert f"probabilities: {shown} on wasm" in console.inner_text()
        assert not ctx.blocked, ctx.blocked


def test_the_readme_is_short_and_its_figures_are_the_kept_runs() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    figures: dict[str, dict] = {}
    for name in ("latest", "engines", "network"):
        run = json.loads((DOCS / "bench" / f"{name}.json").read_text())
        figures |= {k: v for k, v in run["figures"].items() if v["n"]}
    rows = re.findall(r"^\| `(\w+)` \| ([^|]+) \|", readme, re.M)
    assert len(rows) >= 5
    for key, shown in rows:
        assert key in figures, f"README figure {key} is in no kept bench run"
        assert shown.strip() == _fmt(figures[key]["median"]), (
            f"README's {key} is {shown.strip()}, the kept run says "
            f"{_fmt(figures[key]['median'])}: copy it from docs/bench/")


def test_every_readme_link_into_the_docs_exists() -> None:
    readme = (ROOT / "README.md").read_text()
    links = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert links
    for link in links:
        assert (ROOT / link).is_file(), link
