"""``ortweb site``: a model and a Python script as a self-contained static web site.

The folder it writes works on any static host and offline: ``index.html``
(rendered from a jinja2 template), the bootstrap (``web/site/boot.js``) and the
JS bridge, Pyodide's core with only the wheels the script needs plus the ortweb
wheel, only the onnxruntime-web files the chosen execution providers load, the
model, the script and its files, ``_headers`` (cross-origin isolation on
Netlify/Cloudflare-style hosts), ``ortweb-sw.js`` (a service worker: the same for
hosts that cannot send headers, and every file of the manifest kept in Cache
Storage by its sha256 for an instant, offline second visit), and
``ortweb-manifest.json`` with every file's size and sha256.

Layout of a site::

    index.html  _headers  ortweb-sw.js  ortweb-manifest.json
    app/        the model (with its external data files), the script, --file files
                (the script's working directory)
    ortweb/     boot.js (the page), site_worker.js (the Web Worker, unless --main-thread;
                with snapshot_maker.js), pyodide-snapshot.gz (Pyodide's memory snapshot,
                made at build time; snapshot.js restores it), pyodide-bytecode.zip (the
                packages' bytecode, compiled at build time), loader.js, python.js,
                unpacked.js (keeps the wheels a visit unpacked for the next), sha256.js,
                site_runner.py, site_page.py, bridge/*.js
    pyodide/    pyodide.mjs, pyodide.asm.js/.wasm, python_stdlib.zip, a trimmed lock, wheels
    ort/        onnxruntime-web builds for the chosen providers
    ortweb/engines/  tract's or wonnx's files, when the providers name them (fetched
                by a session that tries the engine, not at start-up)
    wheels/     --wheel files, installed with micropip (offline) before the script runs
    hashed/     every file of the above that the page fetches (rather than imports) is
                kept at hashed/<sha256's first 16 digits>/<its path>, which hosts may
                cache for good (see site_hashed); the manifest names each (``name``)
    ...         the template's own static files

With ``assets="cdn"`` the ``pyodide/`` core and ``ort/`` come from jsDelivr
(same versions; every file is checked against the sha384/sha256 of the verified
local copy), and only the lock and the ortweb wheel stay in ``pyodide/``.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final
from urllib.parse import quote, unquote

from ... import __version__
from ..errors import SiteError
from ..inpage import source as inpage_source
from .assets import Assets, find_assets
from .bridge_modules import lazy_only
from .offline_packages import PackageError, read_offline
from .pyodide_bytecode import Bytecode, make_bytecode
from .pyodide_snapshot import JSPI as SNAPSHOT_JSPI
from .pyodide_snapshot import Snapshot, make_snapshot, module_imports
from .requirements import resolve_offline
from .site_compress import compress_files
from .site_files import (
    GENERATOR,
    MANIFEST_NAME,
    SW_SCRIPT,
    PageLoads,
    SiteFile,
    SiteReport,
    SiteWriter,
    first_visit,
    format_size,
    read_manifest,
    visit_totals,
)
from .site_folder import check_out, replace_folder
from .site_hashed import CACHE_CONTROL, HASHED, hash_paths, relocate
from .site_inputs import check_inputs, model_data, needed_packages, ort_files
from .site_runtime import (
    CDN_ORT,
    CDN_PYODIDE,
    CDN_PYODIDE_PACKAGES,
    pinned_hashes,
    ship_engines,
    ship_ort,
    ship_pyodide,
)
from .site_template import page_head, render_template, resolve_template

# The builder's parts live in the site_* modules; this one is its public face.
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

_CWD: Final = "/home/pyodide"
#: Where a site keeps the snapshot made at build time.
_SNAPSHOT: Final = "ortweb/pyodide-snapshot.gz"
#: Where a site keeps its packages' bytecode, compiled at build time.
_BYTECODE: Final = "ortweb/pyodide-bytecode.zip"
_CACHE_NAME: Final = "ortweb-models-v1"

_HEADERS_FILE: Final = f"""\
# Written by `ortweb site`. Netlify, Cloudflare Pages and other hosts that read
# this file send these headers; they make the page cross-origin isolated, which
# onnxruntime-web needs for multi-threaded wasm. Hosts that cannot send headers
# get the same from the site's service worker, ortweb-sw.js (it reloads the page once).
/*
  Cross-Origin-Opener-Policy: same-origin
  Cross-Origin-Embedder-Policy: require-corp
  Cross-Origin-Resource-Policy: same-origin
# Files under {HASHED}/ are named by their sha256: a path there never names other bytes,
# so browsers keep them without asking again. index.html, the manifest and the rest keep
# the host's default (revalidated).
/{HASHED}/*
  Cache-Control: {CACHE_CONTROL}
"""


def _lead_engine(providers: Sequence[str]) -> str:
    """The engine of the provider a site's first session tries."""
    from ..._engines import engine_of

    return engine_of(providers[0]).name if providers else "ort"


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
    worker: bool = True,
    snapshot: bool = True,
    bytecode: bool = True,
    compress: bool = True,
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
    worker : bool
        Run Pyodide, ortweb and onnxruntime-web in a module Web Worker (default), so
        the page's main thread never blocks; False runs them on the main thread.
        The script cannot touch the DOM in a worker; ``ortweb_page`` posts to the page.
    snapshot : bool
        Ship Pyodide's memory snapshot, made here in headless Chromium
        (:mod:`.pyodide_snapshot`; about 5 MB gzipped), so even the first visit skips
        Python's start-up in browsers with JSPI (Chromium's). Without it (or where it
        cannot restore), a worker-mode page makes one in the browser for the next visit.
    bytecode : bool
        Ship the bytecode of the Pyodide packages the site loads, compiled here in
        headless Chromium (:mod:`.pyodide_bytecode`; about 1.7 MB for numpy and
        ortweb), so no visit compiles their Python source. Not with ``assets_mode='cdn'``.
    compress : bool
        Write ``NAME.br`` and ``NAME.gz`` beside each file that compresses
        (:mod:`.site_compress`), for hosts that serve precompressed files (``ortweb
        serve`` does); their sizes go to the manifest and the report's byte table.
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
    python_files = check_inputs(model, script, files, wheels)
    data = model_data(model, [script, *files])
    assets = assets or find_assets()
    template_dir = resolve_template(template, assets)
    check_out(out, [model, *data.values(), script, *files, *wheels, template_dir, assets.root],
              force)

    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.ortweb-", dir=out.parent))
    try:
        report = _write(
            tmp, model=model, data=data, script=script, files=list(files), wheels=list(wheels),
            title=title or script.name,
            providers=providers, template_dir=template_dir, assets_mode=assets_mode,
            webgpu_build=webgpu_build, worker=worker, snapshot=snapshot, bytecode=bytecode,
            compress=compress, assets=assets,
            python_files=python_files, extra_context=extra_context or {},
        )
        # mkdtemp makes the folder private; a static host must be able to read it.
        tmp.chmod(0o755)
        replace_folder(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    report.out = out
    return report


def _write(
    root: Path,
    *,
    model: Path,
    data: dict[str, Path],
    script: Path,
    files: list[Path],
    wheels: list[Path],
    title: str,
    providers: list[str],
    template_dir: Path,
    assets_mode: str,
    webgpu_build: str,
    worker: bool,
    snapshot: bool,
    bytecode: bool,
    compress: bool,
    assets: Assets,
    python_files: list[Path],
    extra_context: dict[str, Any],
) -> SiteReport:
    b, loads = SiteWriter(root), PageLoads()
    pinned = pinned_hashes(assets)
    lock = json.loads((assets.pyodide / "pyodide-lock.json").read_text())
    official = json.loads((assets.pyodide / "pyodide-lock.official.json").read_text())
    pyodide_version = str(lock["info"]["version"])
    ort_version = str(json.loads((assets.ort_package / "package.json").read_text())["version"])
    cdn = assets_mode == "cdn"
    # With the CDN every package of the official lock can be had; offline, only those
    # set-up obtained.
    unavailable: dict[str, Any] = {} if cdn else dict(read_offline(assets.pyodide).unavailable)
    try:
        plan = resolve_offline(wheels, [], lock, unavailable)
    except PackageError as exc:
        raise SiteError(f"--wheel: {exc}") from None
    wheel_modules = {top for info in plan.wheels for top in info.top_level}
    packages = needed_packages(
        lock, python_files, unavailable,
        extra=[*plan.lock_packages, *(("micropip",) if plan.wheels else ())],
        local=wheel_modules,
    )

    # The app: the script's working directory.
    model_entry, script_entry, *extra_files = [
        loads.fetch(f"app/{path.name}", b.add_file(f"app/{path.name}", path), path.name,
                    name=path.name)
        for path in [model, script, *files]
    ]
    # The model's external data, beside it under the names its tensors give: the
    # page checks each against the manifest as any file.
    data_entries = [
        loads.fetch(f"app/{quote(location)}", b.add_file(f"app/{location}", path), location,
                    name=location)
        for location, path in data.items()
    ]

    # ortweb's own JS and the in-page runner.
    web_site = assets.web / "site"
    for name in ("boot.js", "sha256.js", "loader.js", "python.js", "snapshot.js", "unpacked.js",
                 *(("site_worker.js", "snapshot_maker.js") if worker else ())):
        loads.module(f"ortweb/{name}", b.add_file(f"ortweb/{name}", web_site / name), name)
    # builds.json: the build table runtime.js imports as a JSON module.
    for src in sorted([*assets.bridge.glob("*.js"), assets.bridge / "builds.json"]):
        loads.module(f"ortweb/bridge/{src.name}", b.add_file(f"ortweb/bridge/{src.name}", src),
                     src.name)
    # The code of engines the first session does not try: imported (and checked) only
    # when a session tries them, so neither the page nor its first visit fetch it.
    later_code = {f"ortweb/bridge/{f}" for f in lazy_only(assets.bridge, _lead_engine(providers))}
    for entry in loads.modules:
        if entry["url"] in later_code:
            entry["later"] = True
    runner = b.add_bytes("ortweb/site_runner.py", inpage_source("site_runner").encode())
    runner_entry = loads.fetch("ortweb/site_runner.py", runner, "site_runner.py")
    # ``import ortweb_page``: how the script posts to the page.
    page_source = b.add_bytes("ortweb/site_page.py", inpage_source("site_page").encode())
    page_entry = loads.fetch("ortweb/site_page.py", page_source, "site_page.py")

    pyodide_base = ship_pyodide(b, loads, assets, lock, official, packages, cdn=cdn,
                                pins=pinned.get("pyodide", {}))

    # The --wheel files, in install order, and the code that installs them.
    wheel_entries = [
        loads.fetch(f"wheels/{info.path.name}", b.add_file(f"wheels/{info.path.name}", info.path),
                    info.path.name, name=info.path.name)
        for info in plan.wheels
    ]
    installer_entry = None
    if wheel_entries:
        installer = b.add_bytes("ortweb/install_wheels.py",
                                inpage_source("install_wheels").encode())
        installer_entry = loads.fetch("ortweb/install_wheels.py", installer, "install_wheels.py")

    # Pyodide's interpreter as memory, made here: the first visit skips its start-up.
    # With what the packages and the site's runner import from the standard library.
    runner_imports = sorted({name for module in ("site_runner", "site_page")
                             for name in module_imports(inpage_source(module))})
    made = (make_snapshot(assets.pyodide, assets.root / "build" / "snapshots",
                          packages=packages, imports=runner_imports) if snapshot
            else Snapshot(None, "not asked for (--no-snapshot)"))
    snapshot_entry = None
    if made.path is not None:
        # The assets' entry itself: it gets its hash-keyed path (``at``) below.
        snapshot_entry = loads.fetch(_SNAPSHOT, b.add_file(_SNAPSHOT, made.path),
                                     "Pyodide snapshot")
        snapshot_entry["jspi"] = SNAPSHOT_JSPI

    # The packages' Python compiled here: no visit compiles their source.
    if not bytecode:
        compiled = Bytecode(None, "not asked for (--no-bytecode)")
    elif cdn:
        compiled = Bytecode(None, "none with --assets cdn (the packages come from the CDN)")
    else:
        compiled = make_bytecode(root / "pyodide", packages, assets.root / "build" / "snapshots")
    bytecode_entry = None
    if compiled.path is not None:
        bytecode_entry = loads.fetch(_BYTECODE, b.add_file(_BYTECODE, compiled.path),
                                     "Python bytecode")

    ort_base = ship_ort(b, loads, assets, providers, webgpu_build, version=ort_version, cdn=cdn,
                        pins=pinned.get("onnxruntime-web", {}))
    engines = ship_engines(b, assets, providers, pinned.get("engines", {}))

    # Cross-origin isolation for hosts with and without custom headers.
    b.add_bytes("_headers", _HEADERS_FILE.encode())
    # The service worker: the same for hosts without headers, and the offline cache.
    sw = b.add_file(SW_SCRIPT, web_site / SW_SCRIPT)

    config = {
        "title": title,
        "cwd": _CWD,
        "model": model_entry,
        "script": script_entry,
        "files": extra_files,
        "data": data_entries,
        "runner": runner_entry,
        "page": page_entry,
        "worker": "ortweb/site_worker.js" if worker else None,
        "snapshot": snapshot_entry,
        "bytecode": bytecode_entry,
        # Where the build's cannot restore (no such snapshot, or a browser without its
        # JSPI API), a worker-mode page makes one in the browser for the next visit.
        "snapshotMaker": "ortweb/snapshot_maker.js" if worker else None,
        "wheels": wheel_entries,
        "installer": installer_entry,
        "providers": providers,
        "webgpuBuild": webgpu_build,
        "packages": packages,
        "pyodide": {"indexURL": pyodide_base, "lockURL": "pyodide/pyodide-lock.json"},
        "ortBaseURL": ort_base,
        "assets": loads.fetched,
        "modules": loads.modules,
        "cacheName": _CACHE_NAME,
        "serviceWorker": SW_SCRIPT,
        "versions": {"ortweb": __version__, "pyodide": pyodide_version,
                     "onnxruntimeWeb": ort_version},
    }
    # Compressed before the page's config is written: each fetched file's entry carries
    # its copies' sizes, by which the page tells a host that sent a copy's bytes without
    # Content-Encoding from a changed file (loader.js).
    encoded: dict[str, dict[str, int]] = {}

    def compress_written(paths: set[str]) -> None:
        if compress:
            encoded.update({c.path: c.encoded for c in compress_files(
                root, [(p, b.digests[p].size, b.digests[p].sha256) for p in sorted(paths)],
                assets.root / "build" / "compressed")})

    compress_written(set(b.digests))
    for entry in (*loads.fetched, *loads.modules):
        if copies := encoded.get(unquote(entry["url"])):
            entry["encoded"] = copies
    # What the page fetches is kept under hash-keyed paths (moved once the manifest is
    # made), which hosts may cache for good.
    moves = hash_paths(loads.fetched, b.digests)
    head = page_head(loads.integrity, config, sw.sri, b.digests["ortweb/boot.js"].sri)

    before_template = set(b.digests)
    render_template(b, template_dir, {
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

    site_files = b.files()
    # What a first visit downloads before the script's first result: the page and its
    # service worker, what boot.js loads, and the engine of the first provider (the one
    # the first session tries: the other ORT build and later providers' engines, files
    # and code, are for fallbacks).
    lead = _lead_engine(providers)
    lead_files = ([f"ort/{n}" for n in ort_files(providers[:1], webgpu_build, assets)]
                  if lead == "ort" else
                  [p for p in b.digests if p.startswith(f"ortweb/engines/{lead}/")])
    # The service worker is registered before the downloads, which it then stores. The
    # snapshot and the bytecode are for later visits (snapshot.js: they cost a first
    # visit on a real link more than they save).
    later_visits = {e["url"] for e in (snapshot_entry, bytecode_entry) if e}
    first = first_visit(loads, page=set(b.digests) - before_template | {SW_SCRIPT},
                        lead=lead_files, later=later_code | later_visits)
    compress_written(set(b.digests) - before_template)  # the template's files
    entries = relocate(root, {
        f.path: {"size": f.size, "sha256": f.sha256, "first_visit": f.path in first,
                 **({"encodings": encoded[f.path]} if encoded.get(f.path) else {})}
        for f in site_files}, moves)
    site_files = [SiteFile(path, e["size"], e["sha256"]) for path, e in sorted(entries.items())]
    manifest = {
        "generator": GENERATOR,
        "ortweb": __version__,
        "title": title,
        "assets": assets_mode,
        "providers": providers,
        "webgpu_build": webgpu_build,
        "engines": engines,
        "mode": "worker" if worker else "main-thread",
        "packages": packages,
        "wheels": [info.path.name for info in plan.wheels],
        "template": template_dir.name,
        "total_size": sum(f.size for f in site_files),
        "first_visit": visit_totals(entries),
        "files": entries,
    }
    (root / MANIFEST_NAME).write_text(json.dumps(manifest, indent=1) + "\n")
    return SiteReport(root, site_files, assets_mode, providers, packages, title, template_dir,
                      snapshot=made.reason or "shipped", bytecode=compiled.reason or "shipped",
                      entries=entries)
