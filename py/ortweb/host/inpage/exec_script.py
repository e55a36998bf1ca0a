# Runs inside Pyodide for `ortweb exec`: the host defines ORTWEB_ARGS (a JSON string)
# before this source. Runs the user's script as __main__ with top-level await,
# returns its exit status; the traceback starts at the user's own code.
import json
import os
import sys
import traceback

import pyodide_js
from pyodide.code import eval_code_async

_args = json.loads(ORTWEB_ARGS)  # type: ignore[name-defined]
os.chdir(_args["cwd"])
sys.argv = [_args["script"], *_args["argv"]]
with open(_args["script"]) as _f:
    _source = _f.read()
# The Pyodide packages the script and its --file modules import, loaded from the
# offline set before it runs, as Pyodide's own loadPackagesFromImports does it. A
# package that is not here is not in the page's lock: its import fails by name.
_problems = []
for _name in [_args["script"], *_args["modules"]]:
    with open(_name) as _f:
        await pyodide_js.loadPackagesFromImports(
            _f.read(), checkIntegrity=True, messageCallback=lambda _m: None,
            errorCallback=_problems.append,
        )
if _problems:
    raise RuntimeError("Pyodide packages the script imports failed to load: "
                       + "; ".join(_problems))
if "micropip" in pyodide_js.loadedPackages.to_py():
    import micropip

    # micropip.install in the script finds what the page's lock and installed
    # wheels hold, and never asks PyPI (the page is offline).
    micropip.set_index_urls([])
_status = 0
try:
    await eval_code_async(
        _source, globals={"__name__": "__main__", "__file__": _args["script"]},
        filename=_args["script"],
    )
except SystemExit as _exit:
    _code = _exit.code
    _status = _code if isinstance(_code, int) else (0 if _code is None else 1)
    if _code is not None and not isinstance(_code, int):
        print(_code, file=sys.stderr)
except BaseException as _exc:
    _tb = _exc.__traceback__
    # Drop the frames of this runner and of pyodide.code, so the traceback starts
    # at the user's script, as `python script.py` would show it.
    while _tb is not None and _tb.tb_frame.f_code.co_filename != _args["script"]:
        _tb = _tb.tb_next
    traceback.print_exception(type(_exc), _exc, _tb or _exc.__traceback__)
    _status = 1
sys.stdout.flush()
sys.stderr.flush()
_status
