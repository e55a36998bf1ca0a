"""``ortweb site``: a model and a Python script as a self-contained static web site.

The folder it writes works on any static host and offline: ``index.html``
(rendered from a jinja2 template), the bootstrap (``web/site/boot.js``) and the
JS bridge, Pyodide's core with only the wheels the script needs plus the ortweb
wheel, only the onnxruntime-web files the chosen execution providers load, the
model, the script and its files, ``_headers`` (cross-origin isolation on
Netlify/Cloudflare-style hosts), ``coi-serviceworker.min.js`` (the same for
hosts that cannot send headers), and ``ortweb-manifest.json`` with every file's
size and sha256.

Layout of a site::

    index.html  _headers  coi-serviceworker.min.js  ortweb-manifest.json
    app/        the model, the script, --file files (the script's working directory)
    ortweb/     boot.js, sha256.js, site_runner.py, bridge/*.js
    pyodide/    pyodide.mjs, pyodide.asm.js/.wasm, python_stdlib.zip, a trimmed lock, wheels
    ort/        onnxruntime-web builds for the chosen providers
    wheels/     --wheel files, installed with micropip (offline) before the script runs
    ...         the template's own static files

With ``assets="cdn"`` the ``pyodide/`` core and ``ort/`` come from jsDelivr
(same versions; every file is checked against the sha384/sha256 of the verified
local copy), and only the lock and the ortweb wheel stay in ``pyodide/``.
"""

from __future__ import annotations

import ast
import base64
import hashlib
import json
import os
import shutil
import tempfile
import traceback
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from ... import __version__
from ..inpage import source as inpage_source
from .assets import Assets, find_assets
from .offline_packages import PackageError, closure, read_offline
from .requirements import resolve_offline

__all__ = [
    "CDN_ORT",
    "CDN_PYODIDE",
    "CDN_PYODIDE_PACKAGES",
    "MANIFEST_NAME",
    "SiteError",
    "SiteFile",
    "SiteReport",
    "build_site",
    "format_size",
    "ort_files",
    "read_manifest",
    "resolve_template",
]

MANIFEST_NAME: Final = "ortweb-manifest.json"
_GENERATOR: Final = "ortweb site"
COI_SCRIPT: Final = "coi-serviceworker.min.js"

#: jsDelivr's mirror of the npm packages: byte for byte the files set-up verified.
CDN_PYODIDE: Final = "https://cdn.jsdelivr.net/npm/pyodide@{version}/"
#: Pyodide's own CDN folder, where the wheels of the official lock live.
CDN_PYODIDE_PACKAGES: Final = "https://cdn.jsdelivr.net/pyodide/v{version}/full/"
CDN_ORT: Final = "https://cdn.jsdelivr.net/npm/onnxruntime-web@{version}/dist/"

_PYODIDE_CORE: Final = ("pyodide.mjs", "pyodide.asm.js", "pyodide.asm.wasm", "python_stdlib.zip")
_PYODIDE_MODULES: Final = ("pyodide.mjs", "pyodide.asm.js")
_BASE_PACKAGES: Final = ("numpy", "ortweb")
_RESERVED: Final = ("app", "ortweb", "pyodide", "ort", "wheels", "_headers", COI_SCRIPT,
                    MANIFEST_NAME)
_CWD: Final = "/home/pyodide"
_CACHE_NAME: Final = "ortweb-models-v1"

_HEADERS_FILE: Final = """\
# Written by `ortweb site`. Netlify, Cloudflare Pages and other hosts that read
# this file send these headers; they make the page cross-origin isolated, which
# onnxruntime-web needs for multi-threaded wasm. Hosts that cannot send headers
# get the same from coi-serviceworker.min.js (it reloads the page once).
/*
  Cross-Origin-Opener-Policy: same-origin
  Cross-Origin-Embedder-Policy: require-corp
  Cross-Origin-Resource-Policy: same-origin
"""


# Browsers refuse module scripts on file:// pages, so boot.js never runs there;
# this inline classic script is the only thing that can tell the visitor why.
_FILE_URL_HINT: Final = (
    "<script>if (location.protocol === 'file:') addEventListener('DOMContentLoaded', () => {"
    " const el = document.getElementById('ortweb-status')"
    " ?? document.body.appendChild(document.createElement('p'));"
    " el.textContent = 'This page must be served over http(s), not opened as a file: run"
    " \"ortweb serve DIR\" in its folder, or put the folder on a static host.'; });</script>"
)


class SiteError(Exception):
    """The site cannot be written; the message says why and what to do."""


@dataclass(frozen=True)
class SiteFile:
    """One file of a written site."""

    path: str
    size: int
    sha256: str


@dataclass
class SiteReport:
    """What :func:`build_site` wrote."""

    out: Path
    files: list[SiteFile]
    assets: str
    providers: list[str]
    packages: list[str]
    title: str
    template: Path

    @property
    def total_size(self) -> int:
        """Bytes in the folder, the manifest included."""
        return sum(f.size for f in self.files) + (self.out / MANIFEST_NAME).stat().st_size

    def largest(self, count: int = 5) -> list[SiteFile]:
        """The ``count`` largest files, largest first."""
        return sorted(self.files, key=lambda f: (-f.size, f.path))[:count]

    def summary(self, count: int = 5) -> str:
        """Lines for a person: where, how big, the largest files."""
        lines = [f"wrote {self.out} ({len(self.files) + 1} files, {format_size(self.total_size)}; "
                 f"assets {self.assets}; providers {','.join(self.providers)}; "
                 f"Pyodide packages {', '.join(self.packages)})",
                 "largest files:"]
        width = max((len(format_size(f.size)) for f in self.largest(count)), default=0)
        for f in self.largest(count):
            lines.append(f"  {format_size(f.size):>{width}}  {f.path}")
        return "\n".join(lines)


def format_size(size: int) -> str:
    """``1536`` → ``'1.5 KB'`` (binary units, as the page shows them)."""
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KB"
    return f"{size / (1024 * 1024):.1f} MB"


# -- hashing --------------------------------------------------------------------------


@dataclass
class _Digest:
    size: int
    sha256: str
    sha384: str

    @property
    def sri(self) -> str:
        """Subresource-integrity value (``integrity=`` attribute, import maps)."""
        return "sha384-" + self.sha384


def _digest_bytes(data: bytes) -> _Digest:
    return _Digest(len(data), hashlib.sha256(data).hexdigest(),
                   base64.b64encode(hashlib.sha384(data).digest()).decode())


def _digest_file(path: Path) -> _Digest:
    h256, h384, size = hashlib.sha256(), hashlib.sha384(), 0
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h256.update(chunk)
            h384.update(chunk)
            size += len(chunk)
    return _Digest(size, h256.hexdigest(), base64.b64encode(h384.digest()).decode())


# -- inputs -----------------------------------------------------------------------------


def ort_files(providers: Sequence[str], webgpu_build: str = "native",
              assets: Assets | None = None) -> list[str]:
    """The onnxruntime-web dist files sessions on ``providers`` load.

    Parameters
    ----------
    providers : sequence of str
        ``'wasm'`` and/or ``'webgpu'``.
    webgpu_build : str
        ``'native'`` (the C++ WebGPU EP) or ``'jsep'``.
    assets : Assets, optional
        Whose build table (``bridge_js/builds.json``) to read; default :func:`find_assets`.

    Returns
    -------
    list of str
        File names in ``dist/``: per build its module, Emscripten glue and wasm.
    """
    if webgpu_build not in ("native", "jsep"):
        raise SiteError(f"webgpu build must be 'native' or 'jsep', not {webgpu_build!r}")
    builds = []
    if "webgpu" in providers:
        builds.append(webgpu_build)
    if "wasm" in providers:
        # wasm sessions never load a WebGPU build: the plain one is smaller and faster.
        builds.append("wasm")
    return (assets or find_assets()).ort_files(builds)


def resolve_template(template: str | os.PathLike[str], assets: Assets | None = None) -> Path:
    """The folder of a template given by name (``templates/NAME``) or path."""
    text = os.fspath(template)
    path = Path(text)
    if path.is_dir():
        return path.resolve()
    assets = assets or find_assets()
    named = assets.root / "templates" / text
    if os.sep not in text and "/" not in text and named.is_dir():
        return named.resolve()
    known = sorted(p.name for p in (assets.root / "templates").iterdir() if p.is_dir())
    raise SiteError(f"no template {text!r}: give a folder, or one of {', '.join(known)}")


def _script_imports(paths: Iterable[Path]) -> set[str]:
    """Top-level module names the Python files import (absolute imports only)."""
    names: set[str] = set()
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
    return names


def _imported_packages(lock: dict[str, Any], python_files: Sequence[Path],
                       local: Iterable[str] = ()) -> dict[str, str]:
    """Lock packages the script and its files import (their own modules and ``local``
    aside), as import name → package."""
    by_import = {imp: name for name, pkg in lock["packages"].items() for imp in pkg["imports"]}
    own = {p.stem for p in python_files} | set(local)
    return {m: by_import[m] for m in sorted(_script_imports(python_files) - own)
            if m in by_import}


def _needed_packages(lock: dict[str, Any], python_files: Sequence[Path],
                     unavailable: dict[str, Any], extra: Iterable[str] = (),
                     local: Iterable[str] = ()) -> list[str]:
    """numpy, ortweb, every lock package the Python files import, ``extra``, and their
    dependencies.

    Raises
    ------
    SiteError
        Naming the import, when it comes from a package not available offline.
    """
    imported = _imported_packages(lock, python_files, local)
    for module, name in imported.items():
        if name in unavailable:
            raise SiteError(
                f"the script imports {module!r}, from the Pyodide package {name!r}, which is "
                "not available offline (set-up could not obtain a verified copy of its "
                "wheel; the README lists the offline packages): build the site with "
                "--assets cdn to load it from Pyodide's CDN"
            )
    try:
        return closure(lock, {*_BASE_PACKAGES, *imported.values(), *extra},
                                 unavailable)
    except PackageError as exc:
        raise SiteError(str(exc)) from None


def _check_python(path: Path) -> None:
    try:
        # Top-level await is allowed: the page runs the script like `ortweb exec`.
        compile(path.read_text(encoding="utf-8"), str(path), "exec",
                flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except SyntaxError as exc:
        raise SiteError(f"{path} is not valid Python: {exc}") from None
    except UnicodeDecodeError:
        raise SiteError(f"{path} is not UTF-8 text") from None


def _check_model(path: Path) -> None:
    import onnx

    try:
        onnx.load_model_from_string(path.read_bytes())
    except Exception as exc:
        raise SiteError(f"{path} is not an ONNX model: {exc}") from None


def _pinned_hashes(assets: Assets) -> dict[str, dict[str, str]]:
    """npm package → file → sha256 from ``assets.lock.json`` (empty when absent)."""
    lock = assets.root / "assets.lock.json"
    if not lock.is_file():
        return {}
    return {pkg["name"]: pkg["files"] for pkg in json.loads(lock.read_text())["npm"]}


# -- output folder ------------------------------------------------------------------------


def read_manifest(folder: Path) -> dict[str, Any] | None:
    """The manifest of a folder ``ortweb site`` wrote, or None."""
    path = folder / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or manifest.get("generator") != _GENERATOR:
        return None
    return manifest


def _is_ours(folder: Path) -> bool:
    """Whether every file in ``folder`` is one the manifest there lists."""
    manifest = read_manifest(folder)
    if manifest is None:
        return False
    listed = set(manifest.get("files", {})) | {MANIFEST_NAME}
    for path in folder.rglob("*"):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink() or (path.is_file() and rel not in listed):
            return False
    return True


def _check_out(out: Path, inputs: Sequence[Path], force: bool) -> None:
    resolved = out.resolve()
    if out.exists() and (out.is_symlink() or not out.is_dir()):
        raise SiteError(f"{out} exists and is not a folder")
    # Even --force must not replace a folder that holds the site's own inputs
    # (`--out .` next to the model) or something as broad as a home folder.
    protected = [Path("/").resolve(), Path.home().resolve(), Path.cwd().resolve()]
    if resolved in protected:
        raise SiteError(f"refusing to write the site into {out}: choose a folder of its own")
    for path in inputs:
        if path.resolve().is_relative_to(resolved):
            raise SiteError(f"refusing to write the site into {out}: it contains {path}")
    if out.is_dir() and any(out.iterdir()) and not force and not _is_ours(out):
        raise SiteError(
            f"{out} is not empty and was not written by `ortweb site` (or holds files its "
            "manifest does not list): choose another --out, or pass --force to replace it"
        )


def _replace_folder(tmp: Path, out: Path) -> None:
    """Move the finished ``tmp`` to ``out``, removing what was there."""
    if out.exists():
        old = out.with_name(f".{out.name}.ortweb-old-{uuid.uuid4().hex[:8]}")
        out.rename(old)
        tmp.rename(out)
        shutil.rmtree(old)
    else:
        tmp.rename(out)


# -- the builder ------------------------------------------------------------------------


@dataclass
class _Builder:
    root: Path
    digests: dict[str, _Digest] = field(default_factory=dict)

    def add_bytes(self, rel: str, data: bytes) -> _Digest:
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.digests[rel] = _digest_bytes(data)
        return self.digests[rel]

    def add_file(self, rel: str, src: Path, expected_sha256: str | None = None) -> _Digest:
        digest = _digest_file(src)
        if expected_sha256 is not None and digest.sha256 != expected_sha256:
            raise SiteError(
                f"{src} does not match its pinned sha256 ({expected_sha256}, got {digest.sha256}): "
                "run `python3 build.py setup` to restore the verified assets"
            )
        target = self.root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, target)
        self.digests[rel] = digest
        return digest


def _asset(url: str, digest: _Digest, label: str, name: str | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {"url": url, "size": digest.size, "sha256": digest.sha256,
                             "label": label}
    if name is not None:
        entry["name"] = name
    return entry


def _json_for_html(value: Any) -> str:
    from jinja2.utils import htmlsafe_json_dumps

    # htmlsafe escapes <, >, & and ' so the JSON cannot end the <script> element.
    return str(htmlsafe_json_dumps(value, dumps=json.dumps, indent=1, sort_keys=True))


def build_site(
    model: Path,
    script: Path,
    out: Path,
    *,
    title: str | None = None,
    providers: Sequence[str] = ("webgpu", "wasm"),
    template: str | os.PathLike[str] = "default",
    assets_mode: str = "local",
    files: Sequence[Path] = (),
    wheels: Sequence[Path] = (),
    webgpu_build: str = "native",
    force: bool = False,
    assets: Assets | None = None,
    extra_context: dict[str, Any] | None = None,
) -> SiteReport:
    """Write a static site that runs ``script`` on ``model`` in the browser.

    Parameters
    ----------
    model : Path
        The ONNX model; the script finds it in its working directory under
        its file name (``os.environ["ORTWEB_MODEL"]``), or fetches
        ``os.environ["ORTWEB_MODEL_URL"]``.
    script : Path
        Python run in Pyodide as ``__main__`` (top-level ``await`` allowed);
        page JS can call the functions it defines through ``window.ortweb``.
    out : Path
        The folder to write. It must not exist, be empty, or be a site this
        function wrote (and nothing else), unless ``force``.
    title : str, optional
        The page title (default: the script's name). Escaped in the page.
    providers : sequence of str
        Default providers of the page's sessions, in order; decides which
        onnxruntime-web builds are shipped.
    template : str or path
        A template name (a folder of ``templates/``) or a folder.
    assets_mode : {'local', 'cdn'}
        Ship Pyodide and onnxruntime-web, or take them from jsDelivr.
    files : sequence of Path
        More files for the script's working directory.
    wheels : sequence of Path
        Wheels installed with micropip, offline, before the script runs; listed in
        the manifest, so the page checks them like any file. Their requirements
        must be met by each other and the Pyodide packages the site ships (with
        ``assets_mode='local'``, the offline ones).
    webgpu_build : {'native', 'jsep'}
        The onnxruntime-web build WebGPU sessions use.
    force : bool
        Replace a non-empty folder ``ortweb site`` did not write.
    assets : Assets, optional
        ortweb's browser assets (default: :func:`find_assets`).
    extra_context : dict, optional
        More template variables.

    Returns
    -------
    SiteReport

    Raises
    ------
    SiteError
        On bad inputs, an unusable output folder, a template error, or an
        asset that does not match its pinned hash.
    """
    from ..._providers import normalize_providers
    from ...errors import InvalidArgument

    if assets_mode not in ("local", "cdn"):
        raise SiteError(f"--assets must be 'local' or 'cdn', not {assets_mode!r}")
    try:
        providers = normalize_providers(list(providers))
    except InvalidArgument as exc:
        raise SiteError(str(exc)) from None
    for path, what in [(model, "model"), (script, "script"), *((f, "file") for f in files),
                       *((w, "wheel") for w in wheels)]:
        if not path.is_file():
            raise SiteError(f"{what} {path} is not a file")
    names = [model.name, script.name, *(f.name for f in files)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise SiteError(f"two inputs share the file name {', '.join(duplicates)}: the script's "
                        "working directory holds them side by side")
    _check_model(model)
    python_files = [script, *(f for f in files if f.suffix == ".py")]
    for path in python_files:
        _check_python(path)
    assets = assets or find_assets()
    template_dir = resolve_template(template, assets)
    _check_out(out, [model, script, *files, *wheels, template_dir, assets.root], force)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.ortweb-", dir=out.parent))
    try:
        report = _write(
            tmp, model=model, script=script, files=list(files), wheels=list(wheels),
            title=title or script.name,
            providers=providers, template_dir=template_dir, assets_mode=assets_mode,
            webgpu_build=webgpu_build, assets=assets, python_files=python_files,
            extra_context=extra_context or {},
        )
        # mkdtemp makes the folder private; a static host must be able to read it.
        tmp.chmod(0o755)
        _replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report.out = out
    return report


def _write(
    root: Path,
    *,
    model: Path,
    script: Path,
    files: list[Path],
    wheels: list[Path],
    title: str,
    providers: list[str],
    template_dir: Path,
    assets_mode: str,
    webgpu_build: str,
    assets: Assets,
    python_files: list[Path],
    extra_context: dict[str, Any],
) -> SiteReport:
    b = _Builder(root)
    pinned = _pinned_hashes(assets)
    lock = json.loads((assets.pyodide / "pyodide-lock.json").read_text())
    official = json.loads((assets.pyodide / "pyodide-lock.official.json").read_text())
    pyodide_version = str(lock["info"]["version"])
    ort_version = str(json.loads((assets.ort_package / "package.json").read_text())["version"])
    cdn = assets_mode == "cdn"
    # With the CDN every package of the official lock can be had; offline, only those
    # set-up obtained.
    unavailable: dict[str, Any] = {} if cdn else dict(
        read_offline(assets.pyodide).unavailable)
    try:
        plan = resolve_offline(wheels, [], lock, unavailable)
    except PackageError as exc:
        raise SiteError(f"--wheel: {exc}") from None
    wheel_modules = {top for info in plan.wheels for top in info.top_level}
    packages = _needed_packages(
        lock, python_files, unavailable,
        extra=[*plan.lock_packages, *(("micropip",) if plan.wheels else ())],
        local=wheel_modules,
    )

    fetched: list[dict[str, Any]] = []  # what boot.js downloads with fetch()
    modules: list[dict[str, Any]] = []  # what the browser imports as JS modules
    integrity: dict[str, str] = {}  # import map: module URL → SRI

    def module(url: str, digest: _Digest, label: str) -> None:
        modules.append({"url": url, "size": digest.size, "label": label})
        integrity[url if "://" in url else "./" + url] = digest.sri

    # The app: the script's working directory.
    model_entry, script_entry, *extra_files = [
        _asset(f"app/{path.name}", b.add_file(f"app/{path.name}", path), path.name, name=path.name)
        for path in [model, script, *files]
    ]
    fetched += [model_entry, script_entry, *extra_files]

    # ortweb's own JS and the in-page runner.
    web_site = assets.web / "site"
    for name in ("boot.js", "sha256.js"):
        module(f"ortweb/{name}", b.add_file(f"ortweb/{name}", web_site / name), name)
    # builds.json: the build table runtime.js imports as a JSON module.
    for src in sorted([*assets.bridge.glob("*.js"), assets.bridge / "builds.json"]):
        module(f"ortweb/bridge/{src.name}", b.add_file(f"ortweb/bridge/{src.name}", src), src.name)
    runner = b.add_bytes("ortweb/site_runner.py", inpage_source("site_runner").encode())
    runner_entry = _asset("ortweb/site_runner.py", runner, "site_runner.py")
    fetched.append(runner_entry)

    # Pyodide: core files, a lock trimmed to the packages shipped, the wheels.
    core_pins = pinned.get("pyodide", {})
    pyodide_base = CDN_PYODIDE.format(version=pyodide_version) if cdn else "pyodide/"
    for name in _PYODIDE_CORE:
        src = assets.pyodide / name
        if cdn:
            digest = _digest_file(src)
            if name in core_pins and digest.sha256 != core_pins[name]:
                raise SiteError(f"{src} does not match assets.lock.json: run build.py setup")
        else:
            digest = b.add_file(f"pyodide/{name}", src, core_pins.get(name))
        url = pyodide_base + name
        if name in _PYODIDE_MODULES:
            module(url, digest, name)
        else:
            fetched.append(_asset(url, digest, name))
    missing = [name for name in packages if name not in official["packages"]
               and not (assets.pyodide / lock["packages"][name]["file_name"]).is_file()]
    if missing:
        raise SiteError(f"{', '.join(missing)} is missing from {assets.pyodide}: run "
                        "`python3 build.py setup`")
    site_lock: dict[str, Any] = {"info": lock["info"], "packages": {}}
    for name in packages:
        entry = dict(lock["packages"][name])
        src = assets.pyodide / entry["file_name"]
        # Wheels of the official lock are checked against it; the ortweb wheel
        # is the one the local lock describes.
        expected = (official["packages"].get(name) or entry)["sha256"]
        if cdn and name in official["packages"] and not src.is_file():
            # Not obtainable here: the page loads it from the CDN, and Pyodide checks
            # it against the lock's sha256 (there is no local copy to take a size from).
            entry["file_name"] = CDN_PYODIDE_PACKAGES.format(version=pyodide_version) + src.name
            site_lock["packages"][name] = entry
            continue
        if cdn and name in official["packages"]:
            digest = _digest_file(src)
            if digest.sha256 != expected:
                raise SiteError(f"{src} does not match the official Pyodide lock")
            entry["file_name"] = CDN_PYODIDE_PACKAGES.format(version=pyodide_version) + src.name
            url = entry["file_name"]
        else:
            digest = b.add_file(f"pyodide/{src.name}", src, expected)
            url = f"pyodide/{src.name}"
        fetched.append(_asset(url, digest, src.name))
        site_lock["packages"][name] = entry
    lock_digest = b.add_bytes("pyodide/pyodide-lock.json",
                              json.dumps(site_lock, indent=1, sort_keys=True).encode())
    fetched.append(_asset("pyodide/pyodide-lock.json", lock_digest, "pyodide-lock.json"))

    # The --wheel files, in install order, and the code that installs them.
    wheel_entries = [
        _asset(f"wheels/{info.path.name}", b.add_file(f"wheels/{info.path.name}", info.path),
               info.path.name, name=info.path.name)
        for info in plan.wheels
    ]
    fetched += wheel_entries
    installer_entry = None
    if wheel_entries:
        installer = b.add_bytes("ortweb/install_wheels.py",
                                inpage_source("install_wheels").encode())
        installer_entry = _asset("ortweb/install_wheels.py", installer, "install_wheels.py")
        fetched.append(installer_entry)

    # onnxruntime-web: only the builds the providers load.
    ort_pins = pinned.get("onnxruntime-web", {})
    ort_base = CDN_ORT.format(version=ort_version) if cdn else "ort/"
    for name in ort_files(providers, webgpu_build, assets):
        src = assets.ort / name
        pin = ort_pins.get(f"dist/{name}")
        if cdn:
            digest = _digest_file(src)
            if pin is not None and digest.sha256 != pin:
                raise SiteError(f"{src} does not match assets.lock.json: run build.py setup")
        else:
            digest = b.add_file(f"ort/{name}", src, pin)
        if name.endswith(".wasm"):
            fetched.append(_asset(ort_base + name, digest, name))
        else:
            module(ort_base + name, digest, name)

    # Cross-origin isolation for hosts with and without custom headers.
    b.add_bytes("_headers", _HEADERS_FILE.encode())
    coi_src = assets.root / "build" / "npm" / "coi-serviceworker" / COI_SCRIPT
    if not coi_src.is_file():
        raise SiteError(f"{coi_src} is missing: run `python3 build.py setup`")
    coi = b.add_file(COI_SCRIPT, coi_src, pinned.get("coi-serviceworker", {}).get(COI_SCRIPT))

    config = {
        "title": title,
        "cwd": _CWD,
        "model": model_entry,
        "script": script_entry,
        "files": extra_files,
        "runner": runner_entry,
        "wheels": wheel_entries,
        "installer": installer_entry,
        "providers": providers,
        "webgpuBuild": webgpu_build,
        "packages": packages,
        "pyodide": {"indexURL": pyodide_base, "lockURL": "pyodide/pyodide-lock.json"},
        "ortBaseURL": ort_base,
        "assets": fetched,
        "modules": modules,
        "cacheName": _CACHE_NAME,
        "coiFallback": True,
        "versions": {"ortweb": __version__, "pyodide": pyodide_version,
                     "onnxruntimeWeb": ort_version},
    }
    boot = b.digests["ortweb/boot.js"]
    crossorigin = ' crossorigin="anonymous"'
    head = "\n".join([
        '<script type="importmap">' + _json_for_html({"integrity": integrity}) + "</script>",
        _FILE_URL_HINT,
        '<script type="application/json" id="ortweb-config">' + _json_for_html(config)
        + "</script>",
        f'<script src="{COI_SCRIPT}" integrity="{coi.sri}"{crossorigin}></script>',
        f'<script type="module" src="ortweb/boot.js" integrity="{boot.sri}"{crossorigin}>'
        "</script>",
    ])

    _render_template(b, template_dir, {
        **extra_context,
        "title": title,
        "head": head,
        "model": model_entry,
        "script": script_entry,
        "files": extra_files,
        "providers": providers,
        "assets_mode": assets_mode,
        "packages": packages,
        "versions": config["versions"],
    })

    site_files = [SiteFile(rel, d.size, d.sha256) for rel, d in sorted(b.digests.items())]
    manifest = {
        "generator": _GENERATOR,
        "ortweb": __version__,
        "title": title,
        "assets": assets_mode,
        "providers": providers,
        "webgpu_build": webgpu_build,
        "packages": packages,
        "wheels": [info.path.name for info in plan.wheels],
        "template": template_dir.name,
        "total_size": sum(f.size for f in site_files),
        "files": {f.path: {"size": f.size, "sha256": f.sha256} for f in site_files},
    }
    (root / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")
    return SiteReport(root, site_files, assets_mode, providers, packages, title, template_dir)


def _render_template(b: _Builder, template_dir: Path, context: dict[str, Any]) -> None:
    """Copy the template's static files, then render its ``*.j2`` files.

    Static files go first so that templates can ask for their integrity
    (``integrity('style.css')``). Files whose name starts with ``_`` or ``.``
    are partials or private and are not written.
    """
    import jinja2
    from markupsafe import Markup

    sources = sorted(p for p in template_dir.rglob("*") if p.is_file())
    rendered: list[tuple[str, Path]] = []
    for src in sources:
        rel = src.relative_to(template_dir).as_posix()
        if any(part.startswith((".", "_")) or part == "__pycache__" for part in rel.split("/")):
            continue
        out_rel = rel[: -len(".j2")] if rel.endswith(".j2") else rel
        if out_rel.split("/")[0] in _RESERVED:
            raise SiteError(f"template file {src} would overwrite the site's {out_rel}")
        if rel.endswith(".j2"):
            rendered.append((out_rel, src))
        else:
            b.add_file(out_rel, src)
    if "index.html" not in {rel for rel, _ in rendered} | set(b.digests):
        raise SiteError(f"template {template_dir} has no index.html.j2")

    def integrity(path: str) -> str:
        digest = b.digests.get(path)
        if digest is None:
            raise SiteError(f"integrity({path!r}): the site has no such file (yet)")
        return digest.sri

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir)),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
    )
    values: dict[str, Any] = {**context, "head": Markup(context["head"]), "integrity": integrity}
    for out_rel, src in rendered:
        name = src.relative_to(template_dir).as_posix()
        try:
            text = env.get_template(name).render(**values)
        except jinja2.TemplateError as exc:
            # jinja2 rewrites tracebacks to point at template lines; an undefined
            # variable (StrictUndefined) carries no line number of its own.
            lines = [f.lineno for f in traceback.extract_tb(exc.__traceback__)
                     if f.filename == str(src)]
            lineno = getattr(exc, "lineno", None) or (lines[-1] if lines else None)
            where = f"{src}:{lineno}" if lineno else str(src)
            raise SiteError(f"template error in {where}: {exc}") from None
        if out_rel == "index.html" and 'src="ortweb/boot.js"' not in text:
            raise SiteError(f"{src} must put {{{{ head }}}} inside <head>: without it the page "
                            "never starts")
        b.add_bytes(out_rel, text.encode())
