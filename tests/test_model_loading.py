"""Loading a model without needless copies, with progress, through the cache.

A model given by URL is downloaded by JavaScript into one buffer, which Python
reads a page at a time for the model's description and onnxruntime-web is then
given: Pyodide's heap must stay flat while a 300 MiB model loads (on the old path,
which fetched the model into Python ``bytes``, it grew by the model's size). The
host tests check that the paged reader reads what the whole-bytes reader reads,
while touching a small part of the file.

Every output is compared with native onnxruntime on the very same files.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from itertools import pairwise
from pathlib import Path
from typing import ClassVar

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from ortweb._onnxproto import PagedBytes, parse_model
from ortweb.testing import run_in_browser

#: Rows of the big model's table: 1228800 × 64 float32 = 300 MiB.
BIG_ROWS = 1_228_800
WIDTH = 64


def _gather_model(rows: int, external: str | None = None) -> onnx.ModelProto:
    """``y = Gather(W, idx) * s``: a ``rows`` × 64 float32 table, looked up."""
    table = (np.arange(rows * WIDTH, dtype=np.int64) % 1009).astype(np.float32).reshape(
        rows, WIDTH)
    graph = helper.make_graph(
        [helper.make_node("Gather", ["W", "idx"], ["g"], axis=0),
         helper.make_node("Mul", ["g", "s"], ["y"])],
        "big",
        [helper.make_tensor_value_info("idx", TensorProto.INT64, ["n"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", WIDTH])],
        [numpy_helper.from_array(table, "W"),
         numpy_helper.from_array(np.full((WIDTH,), 0.5, np.float32), "s")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    model.metadata_props.add(key="size", value=f"{rows} rows")
    if external is not None:
        onnx.external_data_helper.convert_model_to_external_data(
            model, all_tensors_to_one_file=True, location=external, size_threshold=1024)
    return model


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> Path:
    """A 300 MiB model, its weights inside ``model.onnx``."""
    path = tmp_path_factory.mktemp("big") / "big.onnx"
    onnx.save_model(_gather_model(BIG_ROWS), path)
    return path


IDX = np.array([0, 7, BIG_ROWS - 1, 12345], dtype=np.int64)


def _native(path: Path, idx: np.ndarray) -> np.ndarray:
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, {"idx": idx})[0]


# -- the paged reader, on the host -----------------------------------------------------


@pytest.mark.parametrize("page", [7, 4096, 1 << 15])
def test_paged_reader_reads_what_the_bytes_reader_reads(page):
    data = _gather_model(50_000).SerializeToString()  # 12.8 MB
    got = []

    def read(start: int, stop: int) -> bytes:
        got.append(stop - start)
        return data[start:stop]

    paged = PagedBytes(read, len(data), page=page)
    assert parse_model(paged) == parse_model(data)
    # Headers and strings only: the table's 12.8 MB are jumped over.
    assert sum(got) < 4 * page + 4096, (sum(got), len(data))


def test_paged_reader_lists_external_tensors(tmp_path):
    data = _gather_model(1000, external="t.bin").SerializeToString()
    paged = PagedBytes(lambda a, b: data[a:b], len(data), page=64)
    info = parse_model(paged)
    assert info == parse_model(data)
    assert [(t.name, t.location) for t in info.external] == [("W", "t.bin")]


def test_paged_reader_refuses_truncated_bytes_as_the_bytes_reader_does():
    data = _gather_model(1000).SerializeToString()[:-500]
    paged = PagedBytes(lambda a, b: data[a:b], len(data), page=64)
    with pytest.raises(Exception) as bytes_error:
        parse_model(data)
    with pytest.raises(type(bytes_error.value)) as paged_error:
        parse_model(paged)
    assert str(paged_error.value) == str(bytes_error.value)


def test_progress_reports_are_kept_monotonic_per_file():
    from ortweb._progress import Progress

    seen = []
    progress = Progress(lambda *event: seen.append(event))
    report = progress.file("u")
    for loaded, total in ((0, -1), (10, -1), (10, -1), (4, -1), (12, -1), (12, 12)):
        report(loaded, total)
    progress.whole("p", 7)
    # A repeat and a step back (a damaged cached copy downloaded afresh) are not shown.
    assert seen == [("u", 0, None), ("u", 10, None), ("u", 12, None), ("u", 12, 12),
                    ("p", 7, 7)]


def test_progress_keeps_what_the_callback_raised():
    from ortweb._progress import Progress
    from ortweb.errors import InvalidArgument

    def stop(file, loaded, total):
        raise KeyboardInterrupt(file)

    progress = Progress(stop)
    progress.check()  # nothing raised yet
    with pytest.raises(KeyboardInterrupt):
        progress.file("u")(1, 2)
    with pytest.raises(KeyboardInterrupt, match="u"):
        progress.check()
    with pytest.raises(InvalidArgument, match="progress"):
        Progress(3)  # type: ignore[arg-type]


# -- in the browser ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def served_big(ortweb_runtime, big) -> Iterator[str]:
    with ortweb_runtime.shared_folder() as (folder, prefix):
        os.link(big, folder / big.name)  # the server refuses symbolic links
        yield prefix + big.name


@run_in_browser
async def _load_watching_the_heap(ortweb_page, url, idx, cache):
    import js
    import pyodide_js

    import ortweb

    def heap() -> int:
        return int(pyodide_js._module.HEAP8.length)

    url = js.location.origin + url
    before = heap()
    sess = await ortweb.InferenceSession.create(url, providers=["wasm"], cache=cache)
    grown = heap() - before
    (y,) = await sess.run_async(None, {"idx": idx})
    inputs = [(a.name, a.type, a.shape) for a in sess.get_inputs()]
    meta = sess.get_modelmeta().custom_metadata_map
    await sess.close_async()
    return grown, y, inputs, meta


@pytest.mark.browser
def test_a_300_mib_model_by_url_never_enters_pythons_heap(ortweb_page, served_big, big):
    size = big.stat().st_size
    grown, y, inputs, meta = _load_watching_the_heap(ortweb_page, served_big, IDX, False)
    print(f"Pyodide's heap grew by {grown} bytes while a {size}-byte model loaded by URL")
    # Through Python, the heap grew by at least the model's size; now by a page or two.
    assert grown < size // 20, f"Pyodide's heap grew by {grown} bytes for a {size}-byte model"
    np.testing.assert_array_equal(y, _native(big, IDX))
    assert inputs == [("idx", "tensor(int64)", ["n"])]
    assert meta == {"size": f"{BIG_ROWS} rows"}


@run_in_browser
async def _load_path_watching_the_heap(ortweb_page, path, idx):
    import pyodide_js

    import ortweb

    before = int(pyodide_js._module.HEAP8.length)
    sess = await ortweb.InferenceSession.create(path, providers=["wasm"])
    grown = int(pyodide_js._module.HEAP8.length) - before
    (y,) = await sess.run_async(None, {"idx": idx})
    await sess.close_async()
    return grown, y


@run_in_browser
def _remove(ortweb_page, path):
    import os

    os.remove(path)


@pytest.mark.browser
def test_a_300_mib_model_by_path_is_read_once_outside_pythons_heap(ortweb_page, big):
    # Pyodide's file system keeps files in JavaScript: read once from there into one
    # buffer, as a URL's download, and never into Python bytes.
    path = ortweb_page.put_file("big/big.onnx", big)
    try:
        grown, y = _load_path_watching_the_heap(ortweb_page, path, IDX)
    finally:
        _remove(ortweb_page, path)
    size = big.stat().st_size
    assert grown < size // 20, f"Pyodide's heap grew by {grown} bytes for a {size}-byte model"
    np.testing.assert_array_equal(y, _native(big, IDX))


@run_in_browser
async def _fs_buffer(ortweb_page, path, data, idx):
    import js
    import pyodide_js

    import ortweb
    from ortweb import _bridge

    # Written by Python in one write: MEMFS then keeps it as a slice of HEAP8 (an
    # Int8Array), which onnxruntime-web would refuse as a model.
    with open(path, "wb") as f:
        f.write(data)
    try:
        buffer = _bridge.read_fs_file(path)
        node = pyodide_js.FS.lookupPath(path).node
        shared = bool(js.Object.is_(buffer.js.buffer, node.contents.buffer))
        kind = str(buffer.js.constructor.name)
        sess = await ortweb.InferenceSession.create(path, providers=["wasm"])
        (y,) = await sess.run_async(None, {"idx": idx})
        await sess.close_async()
        return buffer.nbytes, buffer.read(0, buffer.nbytes) == data, shared, kind, y
    finally:
        import os

        os.remove(path)


@pytest.mark.browser
def test_a_file_in_memfs_is_given_as_a_view_not_a_copy(ortweb_page, tmp_path):
    # FS.readFile copied the whole file (a gigabyte more at the peak for a 1 GiB model
    # loaded by path); MEMFS keeps it in a typed array already.
    model = tmp_path / "small.onnx"
    onnx.save_model(_gather_model(1000), model)
    data = model.read_bytes()
    idx = np.array([0, 999], dtype=np.int64)
    nbytes, same, shared, kind, y = _fs_buffer(ortweb_page, "/tmp/view.onnx", data, idx)
    assert (nbytes, same, kind) == (len(data), True, "Uint8Array")
    assert shared, "the buffer is a copy of the file, not a view on its bytes"
    np.testing.assert_array_equal(y, _native(model, idx))


# -- servers that misbehave -------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    """``/full/NAME``: the file, with no Content-Length (the body ends when the
    connection closes); ``/cut/NAME``: a Content-Length of the whole file, then
    half of it and a closed connection."""

    files: ClassVar[dict[str, bytes]] = {}
    protocol_version = "HTTP/1.0"

    def do_GET(self) -> None:
        _, how, name = self.path.split("/", 2)
        body = self.files.get(name)
        if body is None or how not in ("full", "cut"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Access-Control-Allow-Origin", "*")
        self.send_header("Cross-Origin-Resource-Policy", "cross-origin")
        if how == "cut":
            self.send_header("Content-Length", str(len(body)))
            body = body[: len(body) // 2]
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()
        self.close_connection = True

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def odd_server() -> Iterator[tuple[str, dict[str, bytes]]]:
    """``(origin, files)``: a second local server whose answers are cut or unsized."""
    files: dict[str, bytes] = {}
    handler = type("Handler", (_Handler,), {"files": files})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", files
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def allow_odd_server(ortweb_page, odd_server):
    """Let the page reach the second server (the page's router refuses other origins)."""
    origin, _ = odd_server
    page = ortweb_page.page

    def through(route):
        route.continue_()

    page.route(origin + "/**", through)
    yield origin
    page.unroute(origin + "/**", through)


@pytest.fixture(scope="module")
def small_ext(tmp_path_factory) -> Path:
    """``small.onnx`` + ``small.bin``: a 1000-row table in the data file (256 kB)."""
    path = tmp_path_factory.mktemp("small") / "small.onnx"
    onnx.save_model(_gather_model(1000, external="small.bin"), path)
    return path


SMALL_IDX = np.array([3, 999, 0], dtype=np.int64)


@contextmanager
def _offline(context) -> Iterator[None]:
    """The browser context with its network cut, for the block."""
    context.set_offline(True)
    try:
        yield
    finally:
        context.set_offline(False)


@run_in_browser
async def _try_create(ortweb_page, url, idx, external_data=None, cache=True):
    import js

    import ortweb

    if url.startswith("/"):
        url = js.location.origin + url
    try:
        sess = await ortweb.InferenceSession.create(
            url, providers=["wasm"], external_data=external_data, cache=cache)
    except ortweb.OrtWebError as exc:
        return type(exc).__name__, str(exc), None
    (y,) = await sess.run_async(None, {"idx": idx})
    await sess.close_async()
    return "ok", "", y


@run_in_browser
async def _cached_urls(ortweb_page):
    import ortweb

    return [f["url"] for f in (await ortweb.cache_info_async())["files"]]


@pytest.fixture
def served_small(ortweb_runtime, small_ext) -> Iterator[str]:
    with ortweb_runtime.shared_folder() as (folder, prefix):
        for name in (small_ext.name, "small.bin"):
            os.link(small_ext.parent / name, folder / name)
        yield prefix


@pytest.mark.browser
def test_data_file_without_content_length_is_size_checked(ortweb_page, served_small, small_ext,
                                                          odd_server, allow_odd_server):
    origin, files = odd_server
    data = (small_ext.parent / "small.bin").read_bytes()
    files["short.bin"] = data[:-64]
    files["whole.bin"] = data
    model = served_small + small_ext.name
    cls, msg, _ = _try_create(ortweb_page, model, SMALL_IDX,
                              {"small.bin": f"{origin}/full/short.bin"})
    assert cls == "InvalidGraph", msg
    for words in ("too short", f"{origin}/full/short.bin", str(len(data)), str(len(data) - 64)):
        assert words in msg, msg
    cls, msg, y = _try_create(ortweb_page, model, SMALL_IDX,
                              {"small.bin": f"{origin}/full/whole.bin"})
    assert cls == "ok", msg
    np.testing.assert_array_equal(y, _native(small_ext, SMALL_IDX))


@pytest.mark.browser
def test_a_cut_download_is_refused_and_leaves_no_cache_entry(ortweb_page, small_ext, odd_server,
                                                              allow_odd_server):
    origin, files = odd_server
    files["cut.onnx"] = _gather_model(1000).SerializeToString()
    url = f"{origin}/cut/cut.onnx"
    cls, msg, _ = _try_create(ortweb_page, url, SMALL_IDX)
    assert cls == "NoSuchFile", msg
    assert url in msg, msg
    assert not [u for u in _cached_urls(ortweb_page) if "cut.onnx" in u]
    # The same file whole: it loads, and is kept.
    cls, msg, y = _try_create(ortweb_page, f"{origin}/full/cut.onnx", SMALL_IDX)
    assert cls == "ok", msg
    np.testing.assert_array_equal(y, _native(small_ext, SMALL_IDX))
    assert f"{origin}/full/cut.onnx" in _cached_urls(ortweb_page)


# -- the cache ---------------------------------------------------------------------------


@run_in_browser
async def _clear(ortweb_page, url=None):
    import js

    import ortweb

    if url is not None and url.startswith("/"):
        url = js.location.origin + url
    return await ortweb.clear_cache_async(url)


@pytest.mark.browser
def test_second_load_comes_from_the_cache_with_the_network_cut(ortweb_page, served_small,
                                                               small_ext):
    model = served_small + small_ext.name
    want = _native(small_ext, SMALL_IDX)
    requests = ortweb_page.pyodide_page.capture.requests

    def asked(since: int) -> list[str]:
        return [u for u in requests[since:] if served_small in u]

    _clear(ortweb_page)
    seen = len(requests)
    cls, msg, _ = _try_create(ortweb_page, model, SMALL_IDX, cache=False)
    assert cls == "ok", msg
    assert len(asked(seen)) == 2, asked(seen)  # the model and its data file
    assert _cached_urls(ortweb_page) == [], "cache=False keeps nothing"
    cls, msg, y = _try_create(ortweb_page, model, SMALL_IDX)
    assert cls == "ok", msg
    np.testing.assert_array_equal(y, want)
    cached = _cached_urls(ortweb_page)
    assert sorted(u.rsplit("/", 1)[1] for u in cached) == ["small.bin", "small.onnx"], cached
    seen = len(requests)
    cls, msg, y = _try_create(ortweb_page, model, SMALL_IDX)
    assert cls == "ok", msg
    np.testing.assert_array_equal(y, want)
    assert asked(seen) == []
    context = ortweb_page.page.context
    with _offline(context):
        cls, msg, y = _try_create(ortweb_page, model, SMALL_IDX)
    assert cls == "ok", msg
    np.testing.assert_array_equal(y, want)
    assert asked(seen) == []
    # Cleared, the next load needs the network again: offline, it fails by name.
    assert _clear(ortweb_page, model) == 1
    with _offline(context):
        cls, msg, _ = _try_create(ortweb_page, model, SMALL_IDX)
    assert cls == "NoSuchFile" and small_ext.name in msg, msg
    assert _clear(ortweb_page) == 1  # small.bin was still there
    assert _cached_urls(ortweb_page) == []


@pytest.mark.browser
def test_a_300_mib_model_is_kept_and_loads_offline(ortweb_page, served_big, big):
    # An off-the-record context's Cache Storage refused files from 256 MiB; its OPFS
    # keeps them (in memory), so the cache of a big file is tested here too.
    want = _native(big, IDX)
    requests = ortweb_page.pyodide_page.capture.requests
    context = ortweb_page.page.context
    _clear(ortweb_page)
    try:
        cls, msg, y = _try_create(ortweb_page, served_big, IDX)
        assert cls == "ok", msg
        np.testing.assert_array_equal(y, want)
        (entry,) = _cache_files(ortweb_page)
        assert entry["url"].endswith(served_big) and entry["size"] == big.stat().st_size, entry
        seen = len(requests)
        with _offline(context):
            cls, msg, y = _try_create(ortweb_page, served_big, IDX)
        assert cls == "ok", msg
        np.testing.assert_array_equal(y, want)
        assert [u for u in requests[seen:] if served_big in u] == []
        assert not [line for line in ortweb_page.console if "could not keep" in line.text]
    finally:
        _clear(ortweb_page)


@pytest.mark.browser
def test_without_opfs_nothing_is_kept_and_loads_still_work(ortweb_runtime, small_ext):
    # An http origin other than localhost is not a secure context: no OPFS, no
    # WebCrypto. The bridge's own fetching module, served there by a route.
    from urllib.parse import urlsplit

    model = small_ext.read_bytes()
    origin = "http://ortweb-insecure.test"

    def answer(route):
        path = urlsplit(route.request.url).path
        if not route.request.url.startswith(origin + "/"):
            route.abort()
        elif path.startswith("/bridge/"):
            route.fulfill(path=ortweb_runtime.assets.bridge / path.removeprefix("/bridge/"),
                          content_type="text/javascript")
        elif path == "/m.onnx":
            route.fulfill(body=model, content_type="application/octet-stream")
        else:
            route.fulfill(body="<!doctype html><title>insecure</title>", content_type="text/html")

    context = ortweb_runtime.browser_for(0).new_context()
    try:
        context.route("**/*", answer)
        page = context.new_page()
        page.goto(origin + "/")
        got = page.evaluate("""async () => {
          const fetching = await import('/bridge/fetching.js');
          const loads = [];
          for (let i = 0; i < 2; i++) {
            const got = await fetching.fetchFile('/m.onnx');
            loads.push([got.status, got.fromCache, got.bytes.length]);
          }
          return {secure: isSecureContext, info: await fetching.cacheInfo(),
                  cleared: await fetching.clearCache(null), loads};
        }""")
    finally:
        context.close()
    assert got == {"secure": False, "info": {"available": False, "files": []}, "cleared": 0,
                   "loads": [[200, False, len(model)]] * 2}, got


# -- the cache's files in OPFS -----------------------------------------------------------
# The layout (bridge_js/file_cache.js): in OPFS's folder ortweb-files-v1, per entry
# <sha256 of the key>.bin (the file) and .json (its sidecar); a Web Lock per entry.

_OPFS = """async ([op, name, arg]) => {
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('ortweb-files-v1');
  if (op === 'list') {
    const names = [];
    for await (const n of dir.keys()) names.push(n);
    return names.sort();
  }
  if (op === 'read') return await (await (await dir.getFileHandle(name)).getFile()).text();
  if (op === 'remove') return await dir.removeEntry(name);
  // 'write': the text arg; 'cut': the file's first arg bytes.
  const handle = await dir.getFileHandle(name, {create: true});
  const writable = await handle.createWritable({keepExistingData: op === 'cut'});
  if (op === 'cut') await writable.truncate(arg); else await writable.write(arg);
  await writable.close();
}"""


def _entry_name(url: str) -> str:
    import hashlib

    return hashlib.sha256(url.encode()).hexdigest()


def _damage(page, name: str, how: str) -> None:
    if how == "sidecar_size":  # the sidecar says a size the file lacks
        sidecar = json.loads(page.evaluate(_OPFS, ["read", name + ".json", None]))
        sidecar["size"] += 1
        page.evaluate(_OPFS, ["write", name + ".json", json.dumps(sidecar)])
    elif how == "data_cut":  # the file lost its end
        page.evaluate(_OPFS, ["cut", name + ".bin", 100])
    elif how == "no_sidecar":  # stopped between the file and its sidecar
        page.evaluate(_OPFS, ["remove", name + ".json", None])
    elif how == "bad_sidecar":
        page.evaluate(_OPFS, ["write", name + ".json", '{"key": '])


@pytest.mark.browser
@pytest.mark.parametrize("how", ["sidecar_size", "data_cut", "no_sidecar", "bad_sidecar"])
def test_a_damaged_entry_is_dropped_and_downloaded_again(ortweb_page, served_small, small_ext,
                                                         how):
    model = served_small + small_ext.name
    page = ortweb_page.page
    origin = page.evaluate("location.origin")
    data = origin + served_small + "small.bin"
    want = _native(small_ext, SMALL_IDX)
    requests = ortweb_page.pyodide_page.capture.requests
    _clear(ortweb_page)
    cls, msg, _ = _try_create(ortweb_page, model, SMALL_IDX)
    assert cls == "ok", msg
    assert len(_cached_urls(ortweb_page)) == 2
    name = _entry_name(data)
    assert {name + ".bin", name + ".json"} <= set(page.evaluate(_OPFS, ["list", None, None]))
    _damage(page, name, how)
    seen = len(requests)
    cls, msg, y = _try_create(ortweb_page, model, SMALL_IDX)
    assert cls == "ok", msg
    np.testing.assert_array_equal(y, want)
    # Only the damaged file was downloaded again, and is kept whole again.
    assert [u for u in requests[seen:] if served_small in u] == [data]
    files = {f["url"]: f["size"] for f in _cache_files(ortweb_page)}
    assert files == {origin + model: (small_ext.parent / small_ext.name).stat().st_size,
                     data: (small_ext.parent / "small.bin").stat().st_size}, files
    # Damaged again, cache_info leaves it out and removes it.
    _damage(page, name, how)
    assert _cached_urls(ortweb_page) == [origin + model]
    assert not [n for n in page.evaluate(_OPFS, ["list", None, None]) if n.startswith(name)]
    assert _clear(ortweb_page) == 1


_START = """async ([url, hold]) => {
  const fetching = await import('/bridge/fetching.js');
  // Holding the entry's lock makes both pages look for the file before either keeps it.
  if (hold) {
    navigator.locks.request('ortweb-files-v1/' + hold,
                            () => new Promise((r) => { window.__release = r; }));
  }
  window.__loaded = fetching.fetchFile(url).then(async (got) => ({
    fromCache: got.fromCache,
    sha256: got.bytes ? await fetching.sha256Hex(got.bytes) : `HTTP ${got.status}`,
  }));
}"""

_WAIT = """async () => {
  window.__release?.();
  window.__release = null;
  return await window.__loaded;
}"""


@pytest.mark.browser
def test_two_pages_download_and_keep_one_file_at_once(ortweb_runtime, ortweb_page):
    import hashlib

    data = _gather_model(20_000).SerializeToString()  # 5 MB: the writes take a while
    sha = hashlib.sha256(data).hexdigest()
    page = ortweb_page.page
    origin = page.evaluate("location.origin")
    _clear(ortweb_page)
    other = page.context.new_page()  # the same origin and storage, a page of its own
    try:
        other.goto(origin + "/bridge/builds.json")
        with ortweb_runtime.shared_folder() as (folder, prefix):
            (folder / "twice.onnx").write_bytes(data)
            url = origin + prefix + "twice.onnx"
            page.evaluate(_START, [url, _entry_name(url)])
            other.evaluate(_START, [url, None])
            # Both downloaded the file and both wrote it: one whole entry is left.
            assert [page.evaluate(_WAIT), other.evaluate(_WAIT)] == [
                {"fromCache": False, "sha256": sha}] * 2
            (entry,) = _cache_files(ortweb_page)
            assert (entry["url"], entry["size"]) == (url, len(data)), entry
        # The server's copy is gone: both pages read the kept one.
        for p in (page, other):
            p.evaluate(_START, [url, None])
            assert p.evaluate(_WAIT) == {"fromCache": True, "sha256": sha}
    finally:
        other.close()
    assert _clear(ortweb_page) == 1


@pytest.mark.browser
def test_the_old_cache_storage_copy_is_dropped(ortweb_page):
    # Earlier versions kept the files in Cache Storage under the same name.
    page = ortweb_page.page
    other = page.context.new_page()  # a page whose bridge has not opened the cache yet
    try:
        other.goto(page.evaluate("location.origin") + "/bridge/builds.json")
        got = other.evaluate("""async () => {
          await (await caches.open('ortweb-files-v1')).put('/old.onnx', new Response('old'));
          const before = await caches.has('ortweb-files-v1');
          const info = await (await import('/bridge/fetching.js')).cacheInfo();
          return [before, info.available, await caches.has('ortweb-files-v1')];
        }""")
    finally:
        other.close()
    assert got == [True, True, False]


_WRITING = """async ([name, key, size]) => {
  // What a writer in this page does, stopped halfway: the entry's lock held, the
  // file written, its sidecar not yet.
  const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle('ortweb-files-v1');
  const put = async (file, bytes) => {
    const writable = await (await dir.getFileHandle(file, {create: true})).createWritable();
    await writable.write(bytes);
    await writable.close();
  };
  await new Promise((held) => navigator.locks.request('ortweb-files-v1/' + name, () => {
    held();
    return new Promise((r) => { window.__finish = r; });
  }));
  await put(name + '.bin', new Uint8Array(size).map((_, i) => (i * 7) & 255));
  window.__complete = async () => {
    const sidecar = {key, url: key, size, sha256: '', stored: new Date().toISOString()};
    await put(name + '.json', new TextEncoder().encode(JSON.stringify(sidecar)));
    window.__finish();
  };
}"""


@pytest.mark.browser
def test_a_load_in_another_page_waits_for_a_write_under_way(ortweb_page, served_small):
    import hashlib

    size = 3_000_000
    sha = hashlib.sha256(((np.arange(size) * 7) & 255).astype(np.uint8).tobytes()).hexdigest()
    page = ortweb_page.page
    origin = page.evaluate("location.origin")
    url = origin + served_small + "not-on-the-server.bin"  # only the cache has it
    _clear(ortweb_page)
    other = page.context.new_page()
    try:
        other.goto(origin + "/bridge/builds.json")
        page.evaluate(_WRITING, [_entry_name(url), url, size])
        other.evaluate(_START, [url, None])
        other.wait_for_timeout(200)
        assert other.evaluate("""() => Promise.race([
          window.__loaded.then(() => 'loaded', () => 'failed'),
          new Promise((r) => setTimeout(() => r('waiting'), 100))])""") == "waiting"
        page.evaluate("() => window.__complete()")
        assert other.evaluate(_WAIT) == {"fromCache": True, "sha256": sha}
    finally:
        other.close()
    assert _clear(ortweb_page) == 1


# -- progress ------------------------------------------------------------------------------


@run_in_browser
async def _with_progress(ortweb_page, prefix, name, idx):
    import js

    import ortweb

    events = []
    url = js.location.origin + prefix + name
    sess = await ortweb.InferenceSession.create(
        url, providers=["wasm"], cache=False,
        progress=lambda file, loaded, total: events.append((file, loaded, total)))
    (y,) = await sess.run_async(None, {"idx": idx})
    await sess.close_async()
    return url, events, y


@run_in_browser
def _drop_in_with_progress(ortweb_page, prefix, name, idx):
    import js
    import onnxruntime

    events = []
    url = js.location.origin + prefix + name
    sess = onnxruntime.InferenceSession(
        url, providers=["CPUExecutionProvider"], cache=False,
        progress=lambda file, loaded, total: events.append((file, loaded, total)))
    return url, events, sess.run(None, {"idx": idx})[0]


def _check_progress(events, files: dict[str, int]) -> None:
    """Per file: ``loaded`` never goes back, ``total`` is the size or None, the last
    event is ``(size, size)``; every file is reported."""
    assert {f for f, _, _ in events} == set(files), events
    for file, size in files.items():
        mine = [(loaded, total) for f, loaded, total in events if f == file]
        assert all(b[0] >= a[0] for a, b in pairwise(mine)), mine
        assert all(t in (None, size) for _, t in mine), mine
        assert mine[-1] == (size, size), mine


@pytest.mark.browser
def test_progress_is_monotonic_and_complete_for_a_url_model_and_its_data(
        ortweb_page, served_small, small_ext):
    sizes = {n: (small_ext.parent / n).stat().st_size for n in (small_ext.name, "small.bin")}
    url, events, y = _with_progress(ortweb_page, served_small, small_ext.name, SMALL_IDX)
    base = url.rsplit("/", 1)[0] + "/"
    _check_progress(events, {base + n: s for n, s in sizes.items()})
    # The model is reported before its data file, which it names.
    assert events[0][0] == url and events[-1][0] == base + "small.bin"
    np.testing.assert_array_equal(y, _native(small_ext, SMALL_IDX))
    # The synchronous constructor, through the drop-in onnxruntime.
    url, events, y = _drop_in_with_progress(ortweb_page, served_small, small_ext.name, SMALL_IDX)
    _check_progress(events, {base + n: s for n, s in sizes.items()})
    np.testing.assert_array_equal(y, _native(small_ext, SMALL_IDX))


@pytest.mark.browser
def test_progress_of_the_big_model_moves_in_steps(ortweb_page, served_big, big):
    url, events, _ = _with_progress(ortweb_page, served_big.rsplit("/", 1)[0] + "/", big.name,
                                    IDX)
    _check_progress(events, {url: big.stat().st_size})
    assert len(events) >= 3, events  # a start, steps, the end: not only the end


@run_in_browser
async def _progress_raises(ortweb_page, prefix, name):
    import js

    import ortweb

    def stop(file, loaded, total):
        if loaded > 0:
            raise KeyboardInterrupt("stopped by the user")

    try:
        await ortweb.InferenceSession.create(js.location.origin + prefix + name, cache=False,
                                             progress=stop)
    except KeyboardInterrupt as exc:
        return str(exc), ortweb.live_handles()["sessions"]
    return "no error", None


@pytest.mark.browser
def test_an_exception_in_progress_stops_the_load(ortweb_page, served_small, small_ext):
    assert _progress_raises(ortweb_page, served_small, small_ext.name) == ("stopped by the user",
                                                                          0)


# -- ortweb run's progress bar ----------------------------------------------------------


def test_progress_bar_draws_each_file_on_one_line():
    import io

    from ortweb.cli._progress import MARK, ProgressBar

    out = io.StringIO()
    bar = ProgressBar(out)
    bar.on_output("stdout", MARK + '["http://h/a/m.onnx", 0, 100]')  # stdout: not progress
    for loaded in (0, 50, 100):
        bar.on_output("stderr", MARK + f'["http://h/a/m.onnx", {loaded}, 100]')
    bar.on_output("stderr", MARK + '["http://h/a/m.bin", 3000000, null]')
    bar.on_output("stderr", MARK + '["http://h/a/m.bin", 6000000, 6000000]')
    lines = out.getvalue().split("\n")
    assert lines[0].split("\r")[-1].strip() == "m.onnx [" + "#" * 30 + "] 0.0/0.0 MB"
    assert "m.onnx [" + "#" * 15 + "." * 15 + "]" in lines[0]
    assert lines[1].split("\r")[-1].strip() == "m.bin [" + "#" * 30 + "] 6.0/6.0 MB"
    assert "m.bin 3.0 MB" in lines[1]
    assert lines[2] == ""


@pytest.mark.browser
def test_cli_run_shows_progress_for_a_model_over_a_few_mb(tmp_path):
    model = tmp_path / "m.onnx"
    onnx.save_model(_gather_model(25_000, external="m.bin"), model)  # 6.4 MB of data
    inputs = tmp_path / "in.npz"
    np.savez(inputs, idx=SMALL_IDX)
    done = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "run", str(model), "-i", str(inputs),
         "--compare-native", "--progress"],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok" in done.stdout, done.stdout
    size = (tmp_path / "m.bin").stat().st_size
    assert f"m.bin [{'#' * 30}] {size / 1e6:.1f}/{size / 1e6:.1f} MB\n" in done.stderr, (
        done.stderr)
    assert "model.onnx [" in done.stderr, done.stderr
    # Without --progress, and stderr not a terminal: no bar.
    done = subprocess.run(
        [sys.executable, "-m", "ortweb.cli", "run", str(model), "-i", str(inputs)],
        capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0 and "MB" not in done.stderr, done.stdout + done.stderr


@run_in_browser
async def _cache_files(ortweb_page):
    import ortweb

    return (await ortweb.cache_info_async())["files"]


@pytest.mark.browser
def test_a_sha256_fragment_is_checked_and_keys_the_cache(ortweb_runtime, ortweb_page, small_ext):
    import hashlib

    data = _gather_model(1000).SerializeToString()
    sha = hashlib.sha256(data).hexdigest()
    _clear(ortweb_page)
    with ortweb_runtime.shared_folder() as (folder, prefix):
        (folder / "whole.onnx").write_bytes(data)
        model = prefix + "whole.onnx"
        cls, msg, _ = _try_create(ortweb_page, f"{model}#sha256={'0' * 64}", SMALL_IDX)
        assert cls == "NoSuchFile" and sha in msg and "0" * 64 in msg, msg
        assert _cache_files(ortweb_page) == []
        cls, msg, y = _try_create(ortweb_page, f"{model}#sha256={sha}", SMALL_IDX)
    assert cls == "ok", msg
    np.testing.assert_array_equal(y, _native(small_ext, SMALL_IDX))
    (entry,) = _cache_files(ortweb_page)
    assert entry["sha256"] == sha and entry["size"] == len(data), entry
    assert entry["url"].endswith(model), entry
    assert _clear(ortweb_page, model) == 1


@run_in_browser
async def _blob_url_model(ortweb_page, model, idx):
    import js
    from pyodide.ffi import to_js

    import ortweb

    blob = js.Blob.new(to_js([to_js(memoryview(model))]))
    url = js.URL.createObjectURL(blob)
    try:
        sess = await ortweb.InferenceSession.create(url, providers=["wasm"])
        (y,) = await sess.run_async(None, {"idx": idx})
        await sess.close_async()
    finally:
        js.URL.revokeObjectURL(url)
    files = (await ortweb.cache_info_async())["files"]
    return y, [f["url"] for f in files if f["url"].startswith("blob:")]


@pytest.mark.browser
def test_a_blob_url_model_loads_and_is_not_cached(ortweb_page, small_ext):
    model = _gather_model(1000).SerializeToString()
    y, cached = _blob_url_model(ortweb_page, model, SMALL_IDX)
    np.testing.assert_array_equal(y, _native(small_ext, SMALL_IDX))
    assert cached == []
    # Not even tried (a blob: URL is in memory already), so no warning either.
    assert not [line for line in ortweb_page.console if "could not keep" in line.text]


@run_in_browser
async def _recreated(ortweb_page, prefix, name, idx):
    import js

    import ortweb

    sess = await ortweb.InferenceSession.create(
        js.location.origin + prefix + name, providers=["wasm"], cache=False)
    # What a failed GPU run does: the model and its data file are fetched again
    # (they were not kept), and the new session replaces the old one.
    await sess._recreate()
    await sess._recreate()
    (y,) = await sess.run_async(None, {"idx": idx})
    sessions = ortweb.live_handles()["sessions"]
    await sess.close_async()
    return y, sessions


@pytest.mark.browser
def test_a_url_session_is_recreated_from_its_url(ortweb_page, served_small, small_ext):
    y, sessions = _recreated(ortweb_page, served_small, small_ext.name, SMALL_IDX)
    np.testing.assert_array_equal(y, _native(small_ext, SMALL_IDX))
    assert sessions == 1
