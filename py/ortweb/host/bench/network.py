"""The network section: a site's first visit on an emulated link, beside the floor.

Over loopback a first visit is CPU-bound; a visitor on a real link waits for bytes.
This section builds one site with ``ortweb site`` (providers ``wasm``; its start-up
script makes the first inference on the model it ships) and serves its folder with the
server of ``ortweb serve`` (:class:`~ortweb.host.serve.StaticServer` at ``/``,
cross-origin isolation on, the precompressed ``.br``/``.gz`` copies the build wrote sent
to a client that accepts them). Beside it, from the same server and with the same
compression, the floor: ``web/net_floor.html``, one plain page that requests Pyodide's
core, numpy's wheel, onnxruntime-web's wasm build and the same model all at once, then
imports numpy and runs the model once.

Per round, per profile of :data:`PROFILES`, in alternating order, each in a fresh
browser context (empty cache and storage): the site's first visit to its first
inference (the page's ``ready`` mark), its second visit in the same context once the
service worker stored every file (what reached the server then, besides the manifest
check and the service worker's update check, is an asset downloaded again), and the
floor's visit to its first result.

What is throttled: Chromium's own emulation, ``Network.emulateNetworkConditions``, sent
on a CDP session of the page before it navigates, and on every target the page's session
auto-attaches (``Target.setAutoAttach`` with ``waitForDebuggerOnStart``, not flattened,
so that the commands go through ``Target.sendMessageToTarget`` on the same Playwright
session): the page's dedicated workers and the service worker that controls it, each
given the same conditions before it runs. The service worker needs its own: a page's
conditions do not reach the requests it makes (measured: a 2.5 MB fetch through it took
0.03 s on the ``mobile`` profile, 2.5 s once attached). Even so, on a busy host a
service worker was seen fetching a few large files at loopback speed, as if its
conditions had reached it late (Development page, the fresh-clone runs): every response
of 64 kB or more is checked to have taken at least nine tenths of what the profile's
download rate allows, and a visit where one did not is made again in a fresh context
(:func:`on_the_link`, :data:`TRIES` visits at most; the notes' ``network.redone`` lists
each, with those responses and the targets attached already running). The visit kept
counts its own in ``net_unthrottled_requests`` (0 when every response took its time; the
notes' ``network.unthrottled`` lists them, with their realm, file and times). Not
throttled: what workers started by workers fetch (onnxruntime-web's threads import its
glue again), on both sides alike, and the registration's fetch of the service worker's
script (12 kB), which Chromium makes for the page.

Bytes and timings are read from each realm's Resource Timing (the page, its workers,
the service workers), not by listening to requests, which slowed the visits measured
(see the site section). A request counts once: in the realm that sent it to the network
(a page's request answered by the service worker has ``workerStart`` set; the service
worker's own fetch is the one on the wire). Bytes are ``encodedBodySize``, the body as
it came over the wire (compressed).

Round trips, item 3 of issue 30: ``last_request_rtts`` is when the last file needed
before the first inference was requested (its ``startTime``, ms from navigation start),
in round trips of the profile: its first byte arrives a round trip later at best.
(Chromium's emulation does not hold back ``responseStart`` by the latency, so the
request's start is what the timings tell reliably.) ``request_waves`` is the longest
chain of requests each sent only after the one before it had arrived
(:func:`request_waves`): the sequential round trips on the critical path, as the timings
show them.

Figures: ``net_<profile>_first_visit_s``, ``net_<profile>_floor_s``,
``net_<profile>_ratio`` (the two per round), ``net_first_visit_bytes``,
``net_bytes_ratio`` (site / floor) and ``net_second_visit_requests``; the ``loopback``
profile (no emulation) gives the same as details.
"""

from __future__ import annotations

import functools
import json
import shutil
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode, urlsplit

from ..browser import Browser, Runtime
from ..build.site import MANIFEST_NAME, build_site
from ..build.site_hashed import by_name, located
from ..serve import StaticServer
from .figures import Recorder
from .plan import Plan
from .site import ready_ms, site_model

__all__ = ["PROFILES", "TRIES", "Profile", "Throttle", "first_visit", "network",
           "network_entries", "on_the_link", "request_waves", "unthrottled",
           "unthrottled_entries"]

Say = Callable[[str], None]


@dataclass(frozen=True)
class Profile:
    """An emulated link: download and upload in Mbit/s, round trip in ms.

    ``down_mbps`` 0 means no emulation at all (loopback).
    """

    name: str
    down_mbps: float
    rtt_ms: float
    up_mbps: float

    def conditions(self) -> dict[str, Any]:
        """The parameters of CDP's ``Network.emulateNetworkConditions`` (bytes/s)."""
        return {"offline": False, "latency": self.rtt_ms,
                "downloadThroughput": self.down_mbps * 1e6 / 8,
                "uploadThroughput": self.up_mbps * 1e6 / 8}

    @property
    def emulated(self) -> bool:
        """Whether this profile throttles at all."""
        return self.down_mbps > 0


#: Issue 30's two links, and loopback (no emulation) for the figures beside them. Upload
#: is not in the issue; a visit's requests are small, so it barely matters.
PROFILES: Final = {
    "loopback": Profile("loopback", 0, 0, 0),
    "broadband": Profile("broadband", 50, 20, 10),
    "mobile": Profile("mobile", 10, 80, 5),
}

#: The site's start-up script: the first inference, then ``ready``.
_SCRIPT: Final = '''\
# mypy: disable-error-code="top-level-await"
"""ortweb bench --sections network: the first inference at start-up."""
import json
import os

import numpy as np

import ortweb

with open("net_site.json", encoding="utf-8") as f:
    shape = json.load(f)["shape"]
sess = await ortweb.InferenceSession.create(os.environ["ORTWEB_MODEL"], providers=["wasm"])
(first,) = await sess.run_async(None, {"x": np.full(shape, 0.5, np.float32)})
print("first inference done", first.shape)
'''

#: In a realm: its Resource Timing, and its time origin (ms since the epoch).
_ENTRIES: Final = """() => {
  const all = [...performance.getEntriesByType('navigation'),
               ...performance.getEntriesByType('resource')];
  return {
    origin: performance.timeOrigin,
    full: performance.getEntriesByType('resource').length >= 250,
    entries: all.map((e) => ({ name: e.name, start: e.startTime,
      responseStart: e.responseStart, end: e.responseEnd, bytes: e.encodedBodySize,
      transfer: e.transferSize, viaWorker: (e.workerStart ?? 0) > 0 })),
  };
}"""


class Throttle:
    """Apply ``profile``'s conditions to ``page`` and every target its session attaches.

    Made before the page navigates; see the module's docstring for what it reaches.
    """

    def __init__(self, context: Any, page: Any, profile: Profile) -> None:
        self.attached: list[str] = []
        #: The types of targets attached already running (not paused on start): the
        #: conditions reach those late, after their first requests perhaps.
        self.running: list[str] = []
        if not profile.emulated:
            return
        self._conditions = profile.conditions()
        self._session = context.new_cdp_session(page)
        self._next = 0
        self._session.on("Target.attachedToTarget", self._attached)
        self._session.send("Network.emulateNetworkConditions", self._conditions)
        self._session.send("Target.setAutoAttach", {
            "autoAttach": True, "waitForDebuggerOnStart": True, "flatten": False})

    def _to(self, session_id: str, method: str, params: Mapping[str, Any]) -> None:
        self._next += 1
        message = json.dumps({"id": self._next, "method": method, "params": dict(params)})
        self._session.send("Target.sendMessageToTarget",
                           {"sessionId": session_id, "message": message})

    def _attached(self, event: Mapping[str, Any]) -> None:
        info, session_id = event["targetInfo"], event["sessionId"]
        self.attached.append(str(info.get("type")))
        if not event.get("waitingForDebugger", False):
            self.running.append(str(info.get("type")))
        # Conditions first, then let it run: its first request is already throttled.
        self._to(session_id, "Network.emulateNetworkConditions", self._conditions)
        self._to(session_id, "Runtime.runIfWaitingForDebugger", {})


#: What the browser fetches on its own, which no first inference waits for.
_IGNORED: Final = "/favicon.ico"


def network_entries(realms: Iterable[Mapping[str, Any]], origin: float,
                    until: float) -> list[dict[str, Any]]:
    """The requests that went to the network, ms from ``origin`` (the page's time origin),
    started by ``until`` (ms from ``origin``), from each realm's :data:`_ENTRIES`.

    A request a service worker answered is left out of the realm that made it: the
    service worker's own fetch is the one on the wire, in its realm.
    """
    out = []
    for realm in realms:
        shift = float(realm["origin"]) - origin
        for e in realm["entries"]:
            if e["viaWorker"] or e["start"] + shift > until or e["name"].endswith(_IGNORED):
                continue
            out.append({"realm": realm.get("realm", ""), "name": e["name"],
                        "start": e["start"] + shift,
                        "responseStart": e["responseStart"] + shift, "end": e["end"] + shift,
                        "bytes": int(e["bytes"]), "transfer": int(e["transfer"])})
    return out


def request_waves(entries: Sequence[Mapping[str, Any]], slack_ms: float = 1.0) -> int:
    """The longest chain of requests each started after the one before it had arrived.

    A request's wave is one more than the highest wave of those whose response ended
    before it started (within ``slack_ms``); one wave is one round trip on the critical
    path at least. 0 without requests.
    """
    waves: list[tuple[float, int]] = []  # (response end, wave) of those seen
    best = 0
    for e in sorted(entries, key=lambda x: x["start"]):
        before = [w for end, w in waves if end <= e["start"] + slack_ms]
        wave = 1 + max(before, default=0)
        waves.append((float(e["end"]), wave))
        best = max(best, wave)
    return best


def unthrottled(entries: Iterable[Mapping[str, Any]], profile: Profile,
                min_bytes: int = 64_000) -> int:
    """How many responses of ``min_bytes`` or more came faster than ``profile``'s
    download rate allows (a tenth of slack): a realm the conditions did not reach."""
    return len(unthrottled_entries(entries, profile, min_bytes))


def unthrottled_entries(entries: Iterable[Mapping[str, Any]], profile: Profile,
                        min_bytes: int = 64_000) -> list[dict[str, Any]]:
    """The responses :func:`unthrottled` counts, each with the least time the link
    allows for its bytes (``least_ms``), so that a report says which realm and file."""
    rate = profile.down_mbps * 1e6 / 8 / 1000  # bytes per ms
    return [{**e, "least_ms": round(e["bytes"] / rate, 1)} for e in entries
            if e["bytes"] >= min_bytes and e["end"] - e["start"] < 0.9 * e["bytes"] / rate]


def _realms(context: Any, page: Any) -> list[dict[str, Any]]:
    got = [{**realm.evaluate(_ENTRIES), "realm": kind}
           for kind, realms in (("page", [page]), ("worker", page.workers),
                                ("service_worker", context.service_workers))
           for realm in realms]
    if any(r["full"] for r in got):
        raise RuntimeError("a realm's Resource Timing buffer is full: requests not counted")
    return got


def _visit_summary(realms: list[dict[str, Any]], until_ms: float, profile: Profile,
                   throttle: Throttle) -> dict[str, Any]:
    entries = network_entries(realms, realms[0]["origin"], until_ms)
    last = max((e["start"] for e in entries), default=0.0)
    fast = unthrottled_entries(entries, profile) if profile.emulated else []
    per_file: dict[str, int] = {}
    for e in entries:
        path = urlsplit(e["name"]).path
        per_file[path] = per_file.get(path, 0) + e["bytes"]
    return {"s": until_ms / 1000, "bytes": sum(e["bytes"] for e in entries),
            "per_file": per_file,
            "requests": len(entries), "waves": request_waves(entries),
            "last_request_rtts": last / profile.rtt_ms if profile.emulated else None,
            "unthrottled": len(fast), "unthrottled_entries": fast,
            "running": sorted(throttle.running)}


def _beyond(site: Mapping[str, int], floor: Mapping[str, int],
            least: int = 10_000) -> dict[str, int]:
    """The site's files of ``least`` bytes or more that the floor did without, largest
    first (paths under the site's folder, as both pages load them from there)."""
    floor_files = {path.split("/site/", 1)[-1] for path in floor}
    extra = {path.split("/site/", 1)[-1]: n for path, n in site.items()
             if path.split("/site/", 1)[-1] not in floor_files and n >= least}
    return dict(sorted(extra.items(), key=lambda kv: -kv[1]))


#: How long a visit on an emulated link may take to be ready (a slow link's first visit
#: takes minutes on a large site).
_READY_TIMEOUT_S: Final = 600.0


#: Requests a second visit makes by design: the manifest check and the browser's
#: update check of the service worker's script.
_CHECKS: Final = frozenset({MANIFEST_NAME, "ortweb-sw.js"})


def _site_visits(runtime: Runtime, server: StaticServer, url: str,
                 profile: Profile) -> dict[str, Any]:
    """The site's first visit and, once it is stored, its second, in one fresh context."""
    context = runtime.browser.new_context()
    try:
        page = context.new_page()
        throttle = Throttle(context, page, profile)
        page.goto(url)
        ready = ready_ms(page, _READY_TIMEOUT_S)
        first = _visit_summary(_realms(context, page), ready, profile, throttle)
        first["attached"] = sorted(throttle.attached)
        stored = page.evaluate("() => window.ortweb.offline")
        page.close()
        if not stored or stored["stored"] != stored["total"]:
            raise RuntimeError(f"the service worker did not store the site: {stored}")
        with server.watching() as served:
            page = context.new_page()
            Throttle(context, page, profile)
            page.goto(url)
            second = ready_ms(page, _READY_TIMEOUT_S)
            page.wait_for_timeout(500)
            page.close()
    finally:
        context.close()
    paths = [p.split("?")[0].removeprefix("/site/") for p in served]
    again = [p for p in paths if p not in _CHECKS]
    return {**first, "second_s": second / 1000, "second_requests": paths,
            "second_assets": again}


def first_visit(browser: Browser, url: str, profile: Profile,
                result: str | None = None) -> dict[str, Any]:
    """A site's first visit in a fresh context (no router) on ``profile``.

    Parameters
    ----------
    browser : Browser
    url : str
        The site, served as ``ortweb serve`` serves it.
    profile : Profile
    result : str, optional
        A JS function that returns the ms from navigation start of the page's first
        result once it has one (falsy before); without it, the page's ``ready`` mark.

    Returns
    -------
    dict
        ``s`` (seconds to the first result), ``bytes`` (compressed, requested before
        the page was ready: what the service worker fetches after that, to store the
        site for later visits, is not what the result waited for), ``requests``,
        ``waves``, ``last_request_rtts`` (see the module's docstring),
        ``unthrottled`` and ``unthrottled_entries`` (the responses that beat the link),
        and ``running`` (the targets attached already running).
    """
    context = browser.new_context()
    try:
        page = context.new_page()
        throttle = Throttle(context, page, profile)
        page.goto(url)
        ready = ms = ready_ms(page, _READY_TIMEOUT_S)
        if result is not None:
            page.wait_for_function(result, timeout=600_000)
            ms = float(page.evaluate(result))
        summary = _visit_summary(_realms(context, page), ready, profile, throttle)
        return {**summary, "s": ms / 1000}
    finally:
        context.close()


def _floor_visit(runtime: Runtime, url: str, profile: Profile) -> dict[str, Any]:
    context = runtime.browser.new_context()
    try:
        page = context.new_page()
        throttle = Throttle(context, page, profile)
        page.goto(url)
        out = page.evaluate("() => window.floorResult")
        if not out.get("ok"):
            raise RuntimeError(f"the network floor page failed: {out.get('message')}")
        return _visit_summary(_realms(context, page), float(out["ms"]), profile, throttle)
    finally:
        context.close()


#: How many times a visit is made at most while a realm escapes the emulation.
TRIES: Final = 3


def on_the_link(visit: Callable[[], dict[str, Any]], profile: Profile,
                redone: list[dict[str, Any]]) -> dict[str, Any]:
    """``visit()``, made again in a fresh context while a response beat ``profile``'s link.

    A target's conditions throttle the requests made once they are set, and on a busy
    host a service worker has been seen fetching as if they had reached it late (a few
    responses of one visit at loopback speed). Such a visit was not made on the
    link: it is made again, up to :data:`TRIES` times in all; the last one is kept as it
    is, so a realm the conditions never reach still shows in
    ``net_unthrottled_requests``.

    Parameters
    ----------
    visit : callable
        One visit in a fresh context; returns a summary with ``unthrottled`` (a count)
        and ``unthrottled_entries``, and ``running`` (the targets attached already
        running).
    profile : Profile
    redone : list of dict
        Gets one record per visit made again: its ``try``, the targets attached already
        running, and the responses that beat the link.

    Returns
    -------
    dict
        The summary of the visit kept.
    """
    for attempt in range(1, TRIES):
        got = visit()
        if not profile.emulated or not got["unthrottled"]:
            return got
        redone.append({"try": attempt, "running": got.get("running", []),
                       "unthrottled": got["unthrottled_entries"]})
    return visit()


def _build(folder: Path, plan: Plan, web: Path) -> tuple[dict[str, Any], str]:
    """The site in ``folder/site``, the floor page in ``folder/floor``; the site's files
    and the floor's query."""
    inputs = folder / "inputs"
    inputs.mkdir(parents=True)
    shape = [plan.net_batch, plan.net_width]
    (inputs / "model.onnx").write_bytes(
        site_model(plan.net_batch, plan.net_width, plan.net_layers))
    (inputs / "net_site.json").write_text(json.dumps({"shape": shape}))
    (inputs / "net_site.py").write_text(_SCRIPT)
    build_site(inputs / "model.onnx", inputs / "net_site.py", folder / "site",
               providers=["wasm"], files=[inputs / "net_site.json"],
               title="ortweb bench network")
    files = dict(json.loads((folder / "site" / MANIFEST_NAME).read_text())["files"])
    (folder / "floor").mkdir()
    for name in ("net_floor.html", "net_floor.js"):
        shutil.copy(web / name, folder / "floor" / name)
    wheel = next(name for name in by_name(files) if name.startswith("pyodide/numpy-"))
    kept = {name: located(files, name) for name in (
        "pyodide/pyodide.asm.wasm", "pyodide/python_stdlib.zip", "pyodide/pyodide-lock.json",
        wheel, "ort/ort-wasm-simd-threaded.wasm", "app/model.onnx")}
    query = urlencode({"site": "../site/", "model": "app/model.onnx",
                       "wheel": wheel.split("/", 1)[1], "kept": json.dumps(kept),
                       "dims": ",".join(map(str, shape))})
    return files, query


def network(runtime: Runtime, plan: Plan, rec: Recorder, say: Say,
            notes: dict[str, Any]) -> list[str]:
    """The network section (see the module's docstring); returns its detail keys."""
    with tempfile.TemporaryDirectory(prefix="ortweb-net-") as tmp:
        return _network(runtime, plan, rec, say, notes, Path(tmp))


def _network(runtime: Runtime, plan: Plan, rec: Recorder, say: Say,
             notes: dict[str, Any], folder: Path) -> list[str]:
    profiles = [PROFILES[name] for name in plan.net_profiles]
    say("bench: network: building the site")
    files, query = _build(folder, plan, runtime.assets.web)
    details: list[str] = []
    with StaticServer(folder) as server:
        site_url = server.url + "site/"
        floor_url = server.url + "floor/net_floor.html?" + query
        say(f"bench: network: {plan.net_reps} rounds of {', '.join(plan.net_profiles)} "
            "(the site's first and second visit, the floor's visit, fresh contexts)")
        seconds: list[int] = []
        notes.setdefault("network", {}).setdefault("redone", [])
        for i in range(plan.net_reps):
            for profile in profiles:
                p = profile.name
                sides: dict[str, Callable[[], dict[str, Any]]] = {
                    "site": functools.partial(_site_visits, runtime, server, site_url, profile),
                    "floor": functools.partial(_floor_visit, runtime, floor_url, profile),
                }
                # Alternating which side goes first: neither always meets the host warm.
                order = list(sides) if i % 2 == 0 else list(sides)[::-1]
                got = {}
                for side in order:
                    redone: list[dict[str, Any]] = []
                    got[side] = on_the_link(sides[side], profile, redone)
                    for r in redone:
                        say(f"bench: network: round {i + 1} {p} {side}: "
                            f"{len(r['unthrottled'])} responses beat the link "
                            f"(targets attached running: {r['running'] or 'none'}); made again")
                    notes.setdefault("network", {}).setdefault("redone", []).extend(
                        {"round": i + 1, "profile": p, "side": side, **r} for r in redone)
                site, floor = got["site"], got["floor"]
                key = f"net_{p}"
                rec.add(f"{key}_first_visit_s", [site["s"]])
                rec.add(f"{key}_floor_s", [floor["s"]])
                rec.add(f"{key}_ratio", [site["s"] / floor["s"]])
                rec.add(f"{key}_second_visit_s", [site["second_s"]])
                rec.add("net_first_visit_bytes", [site["bytes"]])
                rec.add("net_floor_bytes", [floor["bytes"]])
                rec.add("net_bytes_ratio", [site["bytes"] / floor["bytes"]])
                rec.add("net_second_visit_requests", [len(site["second_assets"])])
                rec.add("net_second_visit_all_requests", [len(site["second_requests"])])
                rec.add("net_first_visit_requests", [site["requests"]])
                rec.add("net_floor_requests", [floor["requests"]])
                rec.add(f"{key}_site_request_waves", [site["waves"]])
                rec.add(f"{key}_floor_request_waves", [floor["waves"]])
                if profile.emulated:
                    rec.add(f"{key}_site_last_request_rtts", [site["last_request_rtts"]])
                    rec.add(f"{key}_floor_last_request_rtts", [floor["last_request_rtts"]])
                    rec.add("net_unthrottled_requests",
                            [site["unthrottled"] + floor["unthrottled"]])
                    notes.setdefault("network", {}).setdefault("unthrottled", []).extend(
                        {"round": i + 1, "profile": p, "side": side, **e}
                        for side in ("site", "floor") for e in got[side]["unthrottled_entries"])
                seconds.append(len(site["second_assets"]))
                notes.setdefault("network", {}).update({
                    "second_visit_requests": site["second_requests"],
                    "attached_targets": site["attached"],
                    "site_bytes_beyond_floor": _beyond(site["per_file"], floor["per_file"])})
                say(f"bench: network: round {i + 1} {p}: site {site['s']:.2f} s, floor "
                    f"{floor['s']:.2f} s; {site['bytes']:,} / {floor['bytes']:,} bytes")
        for profile in profiles:
            key = f"net_{profile.name}"
            if not profile.emulated:
                details += [f"{key}_first_visit_s", f"{key}_floor_s", f"{key}_ratio"]
            details += [f"{key}_second_visit_s", f"{key}_site_request_waves",
                        f"{key}_floor_request_waves"]
            if profile.emulated:
                details += [f"{key}_site_last_request_rtts", f"{key}_floor_last_request_rtts"]
    notes.setdefault("network", {}).update({
        "profiles": {p.name: p.conditions() for p in profiles if p.emulated},
        "model": (f"{plan.net_layers} x MatMul+Relu [{plan.net_batch}, {plan.net_width}] "
                  "on wasm"),
        "manifest_first_visit": sum(f["size"] for f in files.values() if f["first_visit"]),
        "second_visit_asset_requests_per_round": seconds,
    })
    return ["net_floor_bytes", "net_first_visit_requests", "net_floor_requests",
            "net_second_visit_all_requests", "net_unthrottled_requests", *details]
