# Runs inside Pyodide for `ortweb exec`: the host defines ORTWEB_ARGS (a JSON string)
# before this source. Runs the user's script as __main__ with top-level await,
# returns its exit status; the traceback starts at the user's own code.
import json
import os
import sys
import traceback

from pyodide.code import eval_code_async

_args = json.loads(ORTWEB_ARGS)  # type: ignore[name-defined]
os.chdir(_args["cwd"])
sys.argv = [_args["script"], *_args["argv"]]
with open(_args["script"]) as _f:
    _source = _f.read()
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
