"""Tiny pure-Python wheels, zipped with the standard library, for the --wheel tests."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from collections.abc import Sequence
from pathlib import Path


def make_wheel(dest: Path, name: str, version: str = "0.1", requires: Sequence[str] = (),
               code: str = "VALUE = 42\n") -> Path:
    """Write ``NAME-VERSION-py3-none-any.whl`` into ``dest``: one package ``NAME`` whose
    ``__init__.py`` is ``code``, with a ``Requires-Dist`` line per ``requires``."""
    dist = f"{name}-{version}.dist-info"
    metadata = (f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
                + "".join(f"Requires-Dist: {r}\n" for r in requires))
    files = {
        f"{name}/__init__.py": code.encode(),
        f"{dist}/METADATA": metadata.encode(),
        f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: ortweb tests\nRoot-Is-Purelib: true\n"
                         b"Tag: py3-none-any\n",
        f"{dist}/top_level.txt": f"{name}\n".encode(),
    }
    record = "".join(
        f"{n},sha256={base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b'=').decode()},"
        f"{len(d)}\n" for n, d in files.items()) + f"{dist}/RECORD,,\n"
    files[f"{dist}/RECORD"] = record.encode()
    dest.mkdir(parents=True, exist_ok=True)
    path = dest / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for member, data in files.items():
            zf.writestr(member, data)
    return path


#: A package that needs numpy (from the Pyodide lock) and another given wheel.
TINYPKG_CODE = '''\
import numpy as np

import tinydep


def doubled(n):
    return tinydep.double(np.arange(n)).tolist()
'''
TINYDEP_CODE = "def double(x):\n    return x * 2\n"


def tiny_wheels(dest: Path) -> tuple[Path, Path]:
    """``tinypkg`` 0.1 (requires ``tinydep>=1``, ``numpy``, and ``pywin32`` on Windows
    only) and ``tinydep`` 1.0 (requires ``numpy``)."""
    pkg = make_wheel(dest, "tinypkg", "0.1",
                     ["tinydep>=1", "numpy", "pywin32; sys_platform == 'win32'"], TINYPKG_CODE)
    dep = make_wheel(dest, "tinydep", "1.0", ["numpy"], TINYDEP_CODE)
    return pkg, dep
