# Runs inside Pyodide for `ortweb bench --sections large`: defines the page's half
# of the large-model section. Each call times one session creation (a model by URL
# or by a path in Pyodide's file system) to the ready session, in ms from
# performance.now(), with Pyodide's heap size before and after (a model fetched by
# JavaScript should leave it flat) and the requests the page made for the model's
# files meanwhile (counted from resource timing; a load from the file cache makes none).
import json

import js
import pyodide_js

import ortweb


def _requests(prefix):
    return sum(1 for e in js.performance.getEntriesByType("resource") if prefix in e.name)


async def bench_large_warm(url):
    """Start ORT-web's runtime on a tiny model, so no load below pays for it."""
    sess = await ortweb.InferenceSession.create(js.location.origin + url, providers=["wasm"])
    await sess.close_async()


async def bench_large_load(source, provider, prefix, cache=True):
    if source.startswith("/_"):
        source = js.location.origin + source
    heap0 = int(pyodide_js._module.HEAPU8.length)
    requests0 = _requests(prefix)
    t0 = js.performance.now()
    sess = await ortweb.InferenceSession.create(source, providers=[provider], cache=cache)
    ms = js.performance.now() - t0
    out = {"ms": ms, "provider": sess.provider, "requests": _requests(prefix) - requests0,
           "pyodide_heap_before": heap0,
           "pyodide_heap_after": int(pyodide_js._module.HEAPU8.length)}
    await sess.close_async()
    return json.dumps(out)


async def bench_large_cache_settled():
    """Wait for the file cache's writes under way (cache_info waits for them)."""
    await ortweb.cache_info_async()
    return json.dumps(True)


json.dumps(True)
