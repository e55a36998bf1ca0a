"""How ortweb waits for JavaScript: the synchronous driver and the event-loop scheduler.

``_bridge.block_on`` steps coroutines itself (one JSPI suspension per bridge call)
instead of handing them to ``run_sync`` whole; a task awaiting a bridge call is
woken in the microtask after the call settles; and on a page's main thread ortweb
lets Pyodide's event loop wake tasks through a ``MessageChannel``. All are about
speed; these tests pin that they change nothing else: every kind of await still
works, results and exceptions come through, callbacks keep their order, the page
still gets to run its own tasks.
"""

from __future__ import annotations

import numpy as np
import pytest

from ortweb.testing import run_in_browser, samples

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def models(ortweb_module_page):
    return {"two": ortweb_module_page.put_file("two.onnx", samples.two_outputs_model())}


@run_in_browser
def test_block_on_drives_every_kind_of_await(ortweb_page):
    import asyncio

    from pyodide.code import run_js

    import ortweb
    from ortweb import _bridge

    later = run_js("(v, ms) => new Promise((ok) => setTimeout(() => ok(v), ms))")
    failing = run_js("() => Promise.reject(new RangeError('from JS'))")

    async def inner(x):
        await asyncio.sleep(0)
        return x + 1

    async def body():
        steps: list[object] = []
        await asyncio.sleep(0)  # a bare yield
        steps.append("sleep0")
        await asyncio.sleep(0.01)  # a timer (call_later over 2 ms)
        steps.append("sleep10ms")
        steps.append(await later(7, 5))  # a JS promise
        fut = asyncio.get_event_loop().create_future()
        asyncio.get_event_loop().call_soon(fut.set_result, "future")
        steps.append(await fut)  # an asyncio Future resolved by the loop
        steps.append(await asyncio.gather(inner(1), inner(2)))  # other tasks
        steps.append((await _bridge.call("versions", "wasm", context="t")).to_py()["ort"])
        try:
            await failing()
        except Exception as exc:  # a rejected promise raises where it was awaited
            steps.append(type(exc).__name__ + ": " + str(exc))
        return steps

    steps = _bridge.block_on(body())
    assert steps[:4] == ["sleep0", "sleep10ms", 7, "future"]
    assert list(steps[4]) == [2, 3]
    assert steps[5] == ortweb.runtime_info()["onnxruntime_web"]
    assert "RangeError" in steps[6] and "from JS" in steps[6], steps[6]

    async def raises():
        await asyncio.sleep(0)
        raise KeyError("kept")

    try:
        _bridge.block_on(raises())
    except KeyError as exc:
        assert exc.args == ("kept",)
    else:
        raise AssertionError("block_on swallowed the exception")

    # Nested: a synchronous call inside a coroutine that block_on drives.
    async def outer():
        value = _bridge.block_on(inner(10))
        await asyncio.sleep(0)
        return value * 2

    assert _bridge.block_on(outer()) == 22
    assert _bridge._waiting._driving is False


@run_in_browser
async def test_sync_and_async_runs_agree_and_interleave(ortweb_page, models):
    import asyncio

    import ortweb

    sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"])
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    # Tasks running while the sync API suspends Python must not see the driver.
    background = [asyncio.ensure_future(sess.run_async(["double"], {"x": x + i})) for i in range(3)]
    (y,) = sess.run(["double"], {"x": x})
    assert y.tolist() == (x * 2).tolist()
    for i, task in enumerate(background):
        (b,) = await task
        assert b.tolist() == ((x + i) * 2).tolist()
    sess.close()


@run_in_browser
async def test_event_loop_wakes_tasks_through_the_bridge(ortweb_page):
    import asyncio

    from pyodide.code import run_js
    from pyodide.ffi import create_once_callable

    import ortweb
    from ortweb import _bridge

    assert _bridge.event_loop() == "ortweb"
    assert (await ortweb.runtime_info_async())["event_loop"] == "ortweb"
    loop = asyncio.get_event_loop()
    order: list[int | str] = []
    micro = run_js("(f) => Promise.resolve().then(() => f())")

    def bad():
        raise ValueError("one callback fails")

    seen = []
    loop.set_exception_handler(lambda _loop, ctx: seen.append(str(ctx.get("exception"))))
    try:
        for i in range(20):
            loop.call_soon(order.append, i)
            if i == 10:
                loop.call_soon(bad)
        # A microtask queued now runs before any of the callbacks above.
        micro(create_once_callable(lambda: order.append("micro")))
        await asyncio.sleep(0.02)
    finally:
        loop.set_exception_handler(None)
    assert order == ["micro", *range(20)], order
    assert seen == ["one callback fails"], seen


@run_in_browser
async def test_a_bridge_call_wakes_its_task_before_the_next_loop_turn(ortweb_page, models):
    import asyncio

    import ortweb
    from ortweb import _bridge

    assert _bridge.bridge_wakeup() == "microtask"
    assert (await ortweb.runtime_info_async())["bridge_wakeup"] == "microtask"
    sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"])
    x = np.arange(4, dtype=np.float32).reshape(2, 2)
    order: list[str] = []
    # A timer lets the page run a task: the wake-ups before it may have used up
    # their chain's budget (the test's own Python code counts), this one starts anew.
    await asyncio.sleep(0.005)
    asyncio.get_event_loop().call_soon(order.append, "loop turn")
    (y,) = await sess.run_async(["double"], {"x": x})
    order.append("run woke")
    # Woken straight from the microtask after the run, the task may block on the
    # synchronous API (JSPI) as in any other step.
    (z,) = sess.run(["double"], {"x": y})
    await asyncio.sleep(0.01)
    assert order == ["run woke", "loop turn"], order
    assert z.tolist() == (x * 4).tolist()
    sess.close()


@run_in_browser
async def test_back_to_back_calls_still_let_the_page_run(ortweb_page, models):
    import asyncio

    import js
    from pyodide.ffi import create_once_callable

    import ortweb

    sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"])
    x = np.ones((2, 2), np.float32)
    fired = set()
    js.setTimeout(create_once_callable(lambda: fired.add("timer")), 0)
    asyncio.get_event_loop().call_soon(fired.add, "call_soon")
    # Each wake-up is a microtask; unbounded, the page would get no task of its own
    # (timers, input, rendering, other asyncio callbacks) until the loop ends.
    runs = 0
    while fired != {"timer", "call_soon"} and runs < 5000:
        await sess.run_async(["double"], {"x": x})
        runs += 1
    assert fired == {"timer", "call_soon"}, (fired, runs)
    assert runs < 5000
    sess.close()


@run_in_browser
async def test_fast_event_loop_can_be_turned_off(ortweb_page):
    import js
    import pyodide_js
    from pyodide import webloop
    from pyodide.ffi import to_js

    import ortweb
    from ortweb import _bridge
    from ortweb._bridge import _waiting

    ours = webloop.scheduleCallback
    config = getattr(js.globalThis, "ortwebConfig", None)
    try:
        webloop.scheduleCallback = pyodide_js._api.scheduleCallback
        js.globalThis.ortwebConfig = to_js(
            {"fastEventLoop": False}, dict_converter=js.Object.fromEntries
        )
        _waiting._event_loop = None
        _bridge.get_bridge()
        assert _bridge.event_loop() == "pyodide"
        assert _bridge.bridge_wakeup() == "event-loop"
        assert _waiting._same_js(webloop.scheduleCallback, pyodide_js._api.scheduleCallback)
        # Calls still work, woken after a turn of the loop.
        assert (await _bridge.call("versions", "wasm")).to_py()["ort"] == (
            ortweb.runtime_info()["onnxruntime_web"])
        # Without the setting it is installed; a scheduler someone else set is kept.
        js.Reflect.deleteProperty(js.globalThis, "ortwebConfig")
        _waiting._event_loop = None
        _bridge.get_bridge()
        assert _bridge.event_loop() == "ortweb"
        assert _bridge.bridge_wakeup() == "microtask"
        webloop.scheduleCallback = other = pyodide_js._api.scheduleCallback.bind(None)
        _waiting._event_loop = None
        _bridge.get_bridge()
        assert _bridge.event_loop() == "pyodide"
        assert _bridge.bridge_wakeup() == "microtask"  # the wake-up is the bridge's own
        assert webloop.scheduleCallback is other
    finally:
        webloop.scheduleCallback = ours
        _waiting._event_loop = "ortweb"
        _waiting._wake_in_microtask = True
        if config is not None:
            js.globalThis.ortwebConfig = config
        else:
            js.Reflect.deleteProperty(js.globalThis, "ortwebConfig")


@run_in_browser
async def test_another_pyodide_waits_through_the_public_api(ortweb_page, models):
    import asyncio
    import warnings

    import ortweb
    from ortweb._bridge import _waiting

    saved = (_waiting._fast, _waiting.FALLBACK_REASON, _waiting._event_loop,
             _waiting._wake_in_microtask)
    try:
        # What the one version check decides at import on a Pyodide other than 0.27.x.
        _waiting._fast = False
        _waiting.FALLBACK_REASON = _waiting.unsupported_reason("0.28.0")
        _waiting._event_loop = None
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            sess = await ortweb.InferenceSession.create(models["two"], providers=["wasm"])
        assert [str(w.message) for w in caught if "Pyodide 0.28.0" in str(w.message)], caught
        assert _waiting.bridge_wakeup() == "event-loop"
        x = np.arange(4, dtype=np.float32).reshape(2, 2)
        background = asyncio.ensure_future(sess.run_async(["double"], {"x": x + 1}))
        (y,) = await sess.run_async(["double"], {"x": x})
        (z,) = sess.run(["double"], {"x": y})  # block_on hands the coroutine to run_sync
        (b,) = await background
        assert y.tolist() == (x * 2).tolist() and z.tolist() == (x * 4).tolist()
        assert b.tolist() == ((x + 1) * 2).tolist()
        assert _waiting._driving is False
        await sess.close_async()
    finally:
        (_waiting._fast, _waiting.FALLBACK_REASON, _waiting._event_loop,
         _waiting._wake_in_microtask) = saved
