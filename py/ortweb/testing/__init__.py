"""ortweb.testing: a pytest plugin that runs tests inside Pyodide in headless Chromium.

Installed with ortweb (entry point ``pytest11``: ``ortweb``); disable it with
``-p no:ortweb``. Write the test on the host; decorate it with
:func:`run_in_browser` and its body runs in the page, with Pyodide, numpy and
ortweb loaded::

    from ortweb.testing import run_in_browser

    @run_in_browser
    async def test_model(ortweb_page, ortweb_providers, model_path):
        import numpy as np, ortweb
        sess = await ortweb.InferenceSession.create(model_path)
        assert sess.provider == ortweb_providers

Fixtures: ``ortweb_browser`` (also ``browser``), ``ortweb_server``,
``ortweb_runtime``, ``ortweb_webgpu``, ``ortweb_module_page``, ``ortweb_page``,
``ortweb_providers``. Markers: ``webgpu``, ``ortweb_timeout(seconds)``. See
docs/pages/testing.md.
"""

from __future__ import annotations

from ._decorator import run_in_browser
from ._page import ModulePage, OrtwebPage
from ._remote import BrowserTimeout, InBrowserError

__all__ = ["BrowserTimeout", "InBrowserError", "ModulePage", "OrtwebPage", "run_in_browser"]

# Failure reports name these as ortweb.testing.X, where users import them from.
for _cls in (BrowserTimeout, InBrowserError):
    _cls.__module__ = __name__
del _cls
