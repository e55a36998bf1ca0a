"""Tests for the static file server, over real HTTP on loopback."""

from __future__ import annotations

import gzip
import http.client
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from ortweb.host import serve as server_mod
from ortweb.host.serve import StaticServer, content_type_for

SECRET = b"TOP SECRET, outside the mount"

ISOLATION_HEADERS = {
    "cross-origin-opener-policy": "same-origin",
    "cross-origin-embedder-policy": "require-corp",
    "cross-origin-resource-policy": "same-origin",
}

MIME_CASES = {
    "index.html": "text/html; charset=utf-8",
    "app.js": "text/javascript",
    "mod.mjs": "text/javascript",
    "ort.wasm": "application/wasm",
    "data.json": "application/json",
    "style.css": "text/css; charset=utf-8",
    "icon.svg": "image/svg+xml",
    "pic.png": "image/png",
    "model.onnx": "application/octet-stream",
    "graph.pb": "application/octet-stream",
    "arrays.npz": "application/octet-stream",
    "array.npy": "application/octet-stream",
    "weights.data": "application/octet-stream",
    "pkg-1.0-py3-none-any.whl": "application/octet-stream",
    "archive.zip": "application/octet-stream",
    "archive.tar": "application/octet-stream",
    "archive.tar.bz2": "application/octet-stream",
    "script.py": "text/x-python; charset=utf-8",
    "notes.txt": "text/plain; charset=utf-8",
    "app.js.map": "application/json",
    "blob.unknownext": "application/octet-stream",
    "no_suffix": "application/octet-stream",
}


def _request(
    srv: StaticServer, path: str, method: str = "GET", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """Send ``path`` verbatim (http.client does not normalise it)."""
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    try:
        conn.request(method, path, headers=headers or {})
        resp = conn.getresponse()
        body = resp.read()
        headers = {k.lower(): v for k, v in resp.getheaders()}
        return resp.status, headers, body
    finally:
        conn.close()


def _populate(base: Path) -> Path:
    """Create a mount root with assorted files, and a secret just outside it."""
    (base / "secret.txt").write_bytes(SECRET)
    root = base / "root"
    root.mkdir()
    for name in MIME_CASES:
        (root / name).write_bytes(f"content of {name}".encode())
    (root / "sub").mkdir()
    (root / "sub" / "index.html").write_text("<p>sub</p>", encoding="utf-8")
    (root / "empty").mkdir()
    (root / "a").mkdir()
    (root / "a" / "file.txt").write_text("a file", encoding="utf-8")
    return root


@pytest.fixture
def site(tmp_path: Path) -> Path:
    """A fresh site that the test may modify."""
    return _populate(tmp_path)


@pytest.fixture
def srv(site: Path) -> Iterator[StaticServer]:
    """A server for :func:`site`."""
    with StaticServer(site) as server:
        yield server


@pytest.fixture(scope="module")
def ro_srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StaticServer]:
    """A server shared by the tests that only read, to keep the suite fast."""
    with StaticServer(_populate(tmp_path_factory.mktemp("shared"))) as server:
        yield server


# -- content and headers ----------------------------------------------------


@pytest.mark.parametrize(("name", "expected"), sorted(MIME_CASES.items()))
def test_mime_types(ro_srv: StaticServer, name: str, expected: str) -> None:
    status, headers, body = _request(ro_srv, "/" + name)
    assert status == 200
    assert headers["content-type"] == expected
    assert body == f"content of {name}".encode()
    assert headers["content-length"] == str(len(body))


def test_content_type_for_is_case_insensitive() -> None:
    assert content_type_for("MODEL.WASM") == "application/wasm"
    assert content_type_for(Path("x/Index.HTML")) == "text/html; charset=utf-8"


def test_isolation_headers_present(ro_srv: StaticServer) -> None:
    for path in ("/index.html", "/missing.txt"):
        _, headers, _ = _request(ro_srv, path)
        for key, value in ISOLATION_HEADERS.items():
            assert headers[key] == value, (path, key)
        assert headers["cache-control"] == "no-cache"
        assert headers["x-content-type-options"] == "nosniff"


def test_isolation_headers_absent_when_disabled(site: Path) -> None:
    with StaticServer(site, isolation=False) as srv:
        status, headers, _ = _request(srv, "/index.html")
    assert status == 200
    for key in ISOLATION_HEADERS:
        assert key not in headers
    assert headers["cache-control"] == "no-cache"
    assert headers["x-content-type-options"] == "nosniff"


def test_urllib_fetch(ro_srv: StaticServer) -> None:
    with urllib.request.urlopen(ro_srv.url + "data.json", timeout=5) as resp:
        assert resp.status == 200
        assert resp.read() == b"content of data.json"


def test_head(ro_srv: StaticServer) -> None:
    status, headers, body = _request(ro_srv, "/ort.wasm", method="HEAD")
    assert status == 200
    assert body == b""
    assert headers["content-length"] == str(len(b"content of ort.wasm"))
    assert headers["content-type"] == "application/wasm"


def test_watching_lists_what_reached_the_server(srv: StaticServer) -> None:
    """What the site bench counts a visit's requests with, without touching the browser."""
    _request(srv, "/data.json")
    with srv.watching() as outer:
        _request(srv, "/data.json?v=1")
        with srv.watching() as inner:
            _request(srv, "/nope.js")
            _request(srv, "/ort.wasm", method="HEAD")
        _request(srv, "/data.json", method="POST")
    _request(srv, "/ort.wasm")
    assert outer == ["/data.json?v=1", "/nope.js", "/ort.wasm", "/data.json"]
    assert inner == ["/nope.js", "/ort.wasm"]
    assert srv._watchers == ()


def test_missing_is_404(ro_srv: StaticServer) -> None:
    assert _request(ro_srv, "/nope.js")[0] == 404
    assert _request(ro_srv, "/nope/deeper/x.js")[0] == 404
    assert _request(ro_srv, "/nope.js", method="HEAD")[0] == 404


def test_directory_index_and_no_listing(ro_srv: StaticServer) -> None:
    status, headers, body = _request(ro_srv, "/")
    assert status == 200
    assert body == b"content of index.html"
    assert headers["content-type"] == "text/html; charset=utf-8"

    status, _, body = _request(ro_srv, "/sub/")
    assert (status, body) == (200, b"<p>sub</p>")

    status, headers, _ = _request(ro_srv, "/sub?x=1")
    assert status == 301
    assert headers["location"] == "/sub/?x=1"

    assert _request(ro_srv, "/empty/")[0] == 404
    assert _request(ro_srv, "/a/")[0] == 404


def test_query_and_fragment_ignored(ro_srv: StaticServer) -> None:
    status, _, body = _request(ro_srv, "/notes.txt?v=123&x=../../secret.txt")
    assert (status, body) == (200, b"content of notes.txt")
    status, _, body = _request(ro_srv, "/notes.txt#frag")
    assert (status, body) == (200, b"content of notes.txt")


def test_percent_encoded_names(site: Path, srv: StaticServer) -> None:
    (site / "with space.txt").write_bytes(b"spaced")
    assert _request(srv, "/with%20space.txt")[2] == b"spaced"


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "OPTIONS", "PATCH"])
def test_other_methods_405(ro_srv: StaticServer, method: str) -> None:
    status, headers, _ = _request(ro_srv, "/index.html", method=method)
    assert status == 405
    assert headers["allow"] == "GET, HEAD"
    assert headers["cross-origin-embedder-policy"] == "require-corp"


def test_keep_alive(ro_srv: StaticServer) -> None:
    conn = http.client.HTTPConnection(ro_srv.host, ro_srv.port, timeout=5)
    try:
        for name in ("app.js", "ort.wasm", "data.json"):
            conn.request("GET", "/" + name)
            resp = conn.getresponse()
            assert resp.read() == f"content of {name}".encode()
    finally:
        conn.close()


def test_large_file_round_trip(site: Path, srv: StaticServer) -> None:
    payload = os.urandom(5 * 1024 * 1024 + 123)
    (site / "big.bin").write_bytes(payload)
    status, headers, body = _request(srv, "/big.bin")
    assert status == 200
    assert headers["content-length"] == str(len(payload))
    assert body == payload


def test_client_disconnect_is_silent(
    site: Path, srv: StaticServer, capfd: pytest.CaptureFixture[str]
) -> None:
    (site / "big.bin").write_bytes(b"\0" * (8 * 1024 * 1024))
    for _ in range(3):
        sock = socket.create_connection((srv.host, srv.port), timeout=5)
        sock.sendall(b"GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.recv(1024)
        # RST instead of FIN, so the server's next write fails at once.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()
    time.sleep(0.1)
    assert _request(srv, "/notes.txt")[0] == 200
    assert capfd.readouterr().err == ""


# -- mounts ------------------------------------------------------------------


def test_longest_prefix_wins(tmp_path: Path) -> None:
    dirs = {}
    for name in ("top", "ort", "ortx", "nested"):
        d = tmp_path / name
        d.mkdir()
        (d / "who.txt").write_text(name, encoding="utf-8")
        dirs[name] = d
    mounts = {
        "/": dirs["top"],
        "/ort/": dirs["ort"],
        "/ort/x": dirs["ortx"],  # trailing slash added by the server
        "/ort/x/deeper/": dirs["nested"],
    }
    with StaticServer(mounts) as srv:
        assert _request(srv, "/who.txt")[2] == b"top"
        assert _request(srv, "/ort/who.txt")[2] == b"ort"
        assert _request(srv, "/ort/x/who.txt")[2] == b"ortx"
        assert _request(srv, "/ort/x/deeper/who.txt")[2] == b"nested"
        # "/ortx/" is not under "/ort/": it falls back to "/".
        assert _request(srv, "/ortx/who.txt")[0] == 404
        status, headers, _ = _request(srv, "/ort")
        assert (status, headers["location"]) == (301, "/ort/")
        assert set(srv.mounts) == {"/", "/ort/", "/ort/x/", "/ort/x/deeper/"}


def test_no_root_mount_means_404(tmp_path: Path) -> None:
    (tmp_path / "f.js").write_text("x", encoding="utf-8")
    with StaticServer({"/only/": tmp_path}) as srv:
        assert _request(srv, "/f.js")[0] == 404
        assert _request(srv, "/only/f.js")[0] == 200


def test_add_and_remove_mount_while_running(tmp_path: Path, site: Path) -> None:
    run = tmp_path / "run-1"
    run.mkdir()
    (run / "input.npy").write_bytes(b"npy")
    with StaticServer(site) as srv:
        assert _request(srv, "/runs/1/input.npy")[0] == 404
        srv.add_mount("/runs/1/", run)
        status, headers, body = _request(srv, "/runs/1/input.npy")
        assert (status, body) == (200, b"npy")
        assert headers["content-type"] == "application/octet-stream"
        assert srv.remove_mount("/runs/1") is True
        assert srv.remove_mount("/runs/1/") is False
        assert _request(srv, "/runs/1/input.npy")[0] == 404
        assert _request(srv, "/index.html")[0] == 200


def test_concurrent_mount_changes(tmp_path: Path, site: Path) -> None:
    dirs = []
    for i in range(4):
        d = tmp_path / f"run{i}"
        d.mkdir()
        (d / "id.txt").write_text(str(i), encoding="utf-8")
        dirs.append(d)
    errors: list[BaseException] = []

    with StaticServer(site) as srv:

        def worker(i: int) -> None:
            try:
                for _ in range(5):
                    srv.add_mount(f"/r{i}/", dirs[i])
                    assert _request(srv, f"/r{i}/id.txt")[2] == str(i).encode()
                    srv.remove_mount(f"/r{i}/")
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert srv.mounts == {"/": str(site)}
    assert errors == []


def test_mount_validation(tmp_path: Path) -> None:
    srv = StaticServer(tmp_path)
    with pytest.raises(NotADirectoryError):
        srv.add_mount("/x/", tmp_path / "does-not-exist")
    (tmp_path / "f.txt").write_text("x", encoding="utf-8")
    with pytest.raises(NotADirectoryError):
        srv.add_mount("/x/", tmp_path / "f.txt")
    with pytest.raises(ValueError):
        srv.add_mount("x/", tmp_path)
    with pytest.raises(ValueError):
        srv.add_mount("/a/../b/", tmp_path)


# -- path safety -------------------------------------------------------------


TRAVERSALS = [
    "/../secret.txt",
    "/a/../../secret.txt",
    "/a/../index.html",  # harmless target, still refused: no ".." at all
    "/%2e%2e/secret.txt",
    "/%2E%2E/secret.txt",
    "/.%2e/secret.txt",
    "/%2e%2e%2fsecret.txt",
    "/a%2f..%2f..%2fsecret.txt",
    "/%252e%252e/secret.txt",
    "/%252e%252e%252fsecret.txt",
    "/%25252e%25252e/secret.txt",
    "/..\\secret.txt",
    "/a\\..\\..\\secret.txt",
    "/..%5csecret.txt",
    "/..%255csecret.txt",
    "/index.html%00.txt",
    "/index.html%2500.txt",
    "/%0a",
    "/%2fetc/passwd",
    "/%252fetc/passwd",
]


@pytest.mark.parametrize("path", TRAVERSALS)
def test_traversal_refused(ro_srv: StaticServer, path: str) -> None:
    status, _, body = _request(ro_srv, path)
    assert status == 403
    assert SECRET not in body


@pytest.mark.parametrize("path", ["/m/../secret.txt", "/m/%2e%2e/secret.txt", "/m//etc/passwd"])
def test_traversal_refused_under_prefix(tmp_path: Path, site: Path, path: str) -> None:
    with StaticServer({"/m/": site}) as srv:
        status, _, body = _request(srv, path)
    assert status == 403
    assert SECRET not in body


def test_double_slash_not_served(ro_srv: StaticServer) -> None:
    # http.server itself collapses a leading "//" before the handler runs.
    status, _, body = _request(ro_srv, "//etc/passwd")
    assert status in (403, 404)
    assert b"root:" not in body


def test_deeply_encoded_path_refused(ro_srv: StaticServer) -> None:
    # Still percent-encoded after the allowed decoding rounds.
    assert _request(ro_srv, "/%2525252525252e")[0] == 403


def test_invalid_utf8_is_bad_request(ro_srv: StaticServer) -> None:
    assert _request(ro_srv, "/%ff%fe.txt")[0] == 400


def _symlink(link: Path, target: Path) -> None:
    try:
        link.symlink_to(target, target_is_directory=target.is_dir())
    except (OSError, NotImplementedError) as exc:
        pytest.skip(f"symlinks unavailable: {exc}")


def test_symlink_escape_refused(tmp_path: Path, site: Path, srv: StaticServer) -> None:
    _symlink(site / "leak.txt", tmp_path / "secret.txt")
    _symlink(site / "leakdir", tmp_path)
    for path in ("/leak.txt", "/leakdir/secret.txt"):
        status, _, body = _request(srv, path)
        assert status in (403, 404), path
        assert SECRET not in body


def test_symlink_index_escape_refused(tmp_path: Path, site: Path, srv: StaticServer) -> None:
    _symlink(site / "empty" / "index.html", tmp_path / "secret.txt")
    status, _, body = _request(srv, "/empty/")
    assert status in (403, 404)
    assert SECRET not in body


def test_symlink_inside_root_served(site: Path, srv: StaticServer) -> None:
    _symlink(site / "alias.js", site / "app.js")
    _symlink(site / "aliasdir", site / "a")
    status, headers, body = _request(srv, "/alias.js")
    assert (status, body) == (200, b"content of app.js")
    assert headers["content-type"] == "text/javascript"
    assert _request(srv, "/aliasdir/file.txt")[2] == b"a file"
    # Leaves through a link and comes back in: the real path is inside.
    _symlink(site / "roundtrip", site.parent)
    assert _request(srv, "/roundtrip/root/notes.txt")[2] == b"content of notes.txt"


def test_symlinked_mount_root(tmp_path: Path, site: Path) -> None:
    link = tmp_path / "root-link"
    _symlink(link, site)
    with StaticServer(link) as srv:
        assert _request(srv, "/notes.txt")[2] == b"content of notes.txt"
        assert _request(srv, "/../secret.txt")[0] == 403


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs mkfifo")
def test_fifo_not_served(site: Path, srv: StaticServer) -> None:
    os.mkfifo(site / "pipe.txt")
    assert _request(srv, "/pipe.txt")[0] == 404


# -- lifecycle ---------------------------------------------------------------


def test_binds_loopback_by_default(site: Path) -> None:
    srv = StaticServer(site)
    with pytest.raises(RuntimeError):
        _ = srv.url
    with srv:
        assert srv.host == "127.0.0.1"
        assert srv.address == ("127.0.0.1", srv.port)
        assert srv.port > 0
        assert srv.url == f"http://127.0.0.1:{srv.port}/"


def test_explicit_port(site: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    with StaticServer(site, port=free_port) as srv:
        assert srv.port == free_port
        assert _request(srv, "/index.html")[0] == 200


def test_stop_twice_is_safe(site: Path) -> None:
    srv = StaticServer(site).start()
    port = srv.port
    assert srv.running
    with pytest.raises(RuntimeError):
        srv.start()
    srv.stop()
    srv.stop()
    assert not srv.running
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    StaticServer(site).stop()  # never started


def test_stop_closes_idle_keep_alive(site: Path) -> None:
    srv = StaticServer(site).start()
    conn = http.client.HTTPConnection(srv.host, srv.port, timeout=5)
    conn.request("GET", "/index.html")
    conn.getresponse().read()
    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 2
    conn.close()


def test_restart_after_stop(site: Path) -> None:
    srv = StaticServer(site)
    with srv:
        assert _request(srv, "/index.html")[0] == 200
    with srv:
        assert _request(srv, "/index.html")[0] == 200


def test_quiet_by_default(ro_srv: StaticServer, capfd: pytest.CaptureFixture[str]) -> None:
    _request(ro_srv, "/index.html")
    _request(ro_srv, "/missing")
    _request(ro_srv, "/../secret.txt")
    assert capfd.readouterr().err == ""


def test_verbose_logs_one_line_per_request(site: Path, capfd: pytest.CaptureFixture[str]) -> None:
    with StaticServer(site, quiet=False) as srv:
        _request(srv, "/index.html")
        _request(srv, "/missing")
    lines = capfd.readouterr().err.splitlines()
    assert len(lines) == 2
    assert "GET /index.html" in lines[0] and "200" in lines[0]
    assert "GET /missing" in lines[1] and "404" in lines[1]


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT")
def test_serve_forever_until_interrupt(site: Path) -> None:
    package_root = Path(server_mod.__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(package_root))
    code = (
        "import sys; from ortweb.host.serve import serve_forever; "
        "serve_forever(sys.argv[1], port=0)"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(site)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        # A shell's background job starts with SIGINT ignored, and Python keeps an
        # ignored SIGINT ignored: give the server the default, as a terminal would.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert " at http://127.0.0.1:" in first
        url = first.split(" at ", 1)[1].strip()
        with urllib.request.urlopen(url + "notes.txt", timeout=5) as resp:
            assert resp.read() == b"content of notes.txt"
            assert resp.headers["Cross-Origin-Opener-Policy"] == "same-origin"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=5)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 0, err
    assert "Stopped." in out
    assert "GET /notes.txt" in err


# -- precompressed files ------------------------------------------------------


@pytest.fixture
def packed(tmp_path: Path) -> tuple[Path, bytes]:
    """``app.js`` with a ``.br`` and a ``.gz`` beside it, as ``ortweb site`` writes them."""
    import brotli

    root = tmp_path / "packed"
    root.mkdir()
    data = b"export const x = 1;\n" * 500
    (root / "app.js").write_bytes(data)
    (root / "app.js.br").write_bytes(brotli.compress(data))
    (root / "app.js.gz").write_bytes(gzip.compress(data))
    (root / "plain.js").write_bytes(data)
    return root, data


@pytest.mark.parametrize(("accept", "encoding"), [
    ("gzip, deflate, br, zstd", "br"),  # Chromium's
    ("gzip", "gzip"),
    ("br;q=0, gzip;q=0.5", "gzip"),
    ("*", "br"),
    ("identity", None),
    ("br;q=0, gzip;q=0", None),
    (None, None),
])
def test_precompressed_file_by_accept_encoding(packed: tuple[Path, bytes], accept: str | None,
                                               encoding: str | None) -> None:
    import brotli

    root, data = packed
    with StaticServer(root) as srv:
        status, headers, body = _request(srv, "/app.js",
                                         headers={"Accept-Encoding": accept} if accept else {})
        head_status, head_headers, head_body = _request(
            srv, "/app.js", "HEAD", headers={"Accept-Encoding": accept} if accept else {})
    assert status == head_status == 200 and head_body == b""
    assert headers.get("content-encoding") == encoding, headers
    assert headers["content-type"] == "text/javascript"
    assert headers["vary"] == "Accept-Encoding"  # whichever was sent: caches must key on it
    assert int(headers["content-length"]) == len(body)
    assert {k: v for k, v in head_headers.items() if k != "date"} == \
        {k: v for k, v in headers.items() if k != "date"}
    decoded = {"br": brotli.decompress, "gzip": gzip.decompress, None: bytes}[encoding](body)
    assert decoded == data


def test_a_file_without_copies_or_with_stale_ones_is_sent_plain(packed: tuple[Path, bytes]
                                                               ) -> None:
    root, data = packed
    old = time.time() - 60
    os.utime(root / "app.js.br", (old, old))  # the file was rewritten after its .br
    with StaticServer(root) as srv:
        _, plain_headers, _ = _request(srv, "/plain.js", headers={"Accept-Encoding": "br"})
        _, headers, body = _request(srv, "/app.js", headers={"Accept-Encoding": "br"})
        _, gz_headers, _ = _request(srv, "/app.js", headers={"Accept-Encoding": "br, gzip"})
    assert "content-encoding" not in plain_headers and "vary" not in plain_headers
    assert "content-encoding" not in headers and body == data
    assert gz_headers["content-encoding"] == "gzip"


def test_a_folder_sends_its_index_precompressed(tmp_path: Path) -> None:
    import brotli

    page = b"<!doctype html><title>x</title>" * 100
    (tmp_path / "sub").mkdir()
    for folder in (tmp_path, tmp_path / "sub"):
        (folder / "index.html").write_bytes(page)
        (folder / "index.html.br").write_bytes(brotli.compress(page))
    with StaticServer(tmp_path) as srv:
        for path in ("/", "/sub/", "/?v=1"):
            status, headers, body = _request(srv, path, headers={"Accept-Encoding": "br"})
            assert status == 200 and headers["content-encoding"] == "br", path
            assert headers["content-type"] == "text/html; charset=utf-8"
            assert brotli.decompress(body) == page
        status, headers, _ = _request(srv, "/sub", headers={"Accept-Encoding": "br"})
        assert status == 301 and "content-encoding" not in headers  # the redirect, as before


# -- caching ------------------------------------------------------------------------------


def test_hash_keyed_files_are_immutable_and_the_rest_revalidated(packed: tuple[Path, bytes]
                                                                ) -> None:
    """A site's files under ``hashed/<16 hex digits>/`` (ortweb site's hash-keyed paths)
    are sent with ``immutable``, plain or precompressed, GET or HEAD, under any mount;
    everything else, and any error, is revalidated."""
    import shutil

    from ortweb.host.build.site_hashed import CACHE_CONTROL

    root, _ = packed
    kept = root / "hashed" / "0123456789abcdef" / "app"
    kept.mkdir(parents=True)
    for name in ("app.js", "app.js.br", "plain.js"):
        shutil.copy(root / name, kept / name)
    (root / "hashed" / "index.html").write_text("<p>not a hashed file</p>")
    with StaticServer({"/": root, "/under/": root}) as srv:
        for prefix in ("", "/under"):
            for path in ("/hashed/0123456789abcdef/app/app.js",
                         "/hashed/0123456789abcdef/app/plain.js?v=1"):
                for method in ("GET", "HEAD"):
                    status, headers, _ = _request(srv, prefix + path, method,
                                                  headers={"Accept-Encoding": "br"})
                    assert status == 200 and headers["cache-control"] == CACHE_CONTROL, \
                        (method, prefix + path)
            for path in ("/", "/index.html", "/app.js", "/hashed/", "/hashed/index.html",
                         "/hashed/0123456789abcde/app/app.js",  # 15 digits: not a hashed path
                         "/hashed/0123456789abcdef/app/missing.js",  # a 404 is never kept
                         "/hashed/0123456789abcdef/app"):  # a redirect neither
                status, headers, _ = _request(srv, prefix + path)
                assert headers["cache-control"] == "no-cache", (prefix + path, status)
