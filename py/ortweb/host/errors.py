"""The exceptions of ortweb's host tools: one root, :class:`HostError`.

Everything the host side raises about its own work (the browser, a page, Python
inside a page, packages, sites, the command line) is a :class:`HostError`, so a
caller that drives the host tools needs one ``except``::

    HostError
    ├── BrowserError       Chromium or a page could not be brought up or used (also RuntimeError)
    │   └── PageFailure    a page crashed or closed while it ran something
    │       └── PageUnresponsive  its main thread never came back (stuck in wasm or a JS loop)
    ├── PythonFailure      Python code inside a page raised: .type, .traceback (also RuntimeError;
    │                      ortweb.host.sitepage.SiteFailure is this class)
    ├── BrowserTimeout     ortweb.testing: a test ran past its timeout inside the browser
    ├── InBrowserError     ortweb.testing: a page's exception whose class the host cannot rebuild
    ├── PackageError       ortweb.host.build.offline_packages: a wheel or requirement
    │                      cannot be had offline
    ├── SiteError          ortweb.host.build.site (`ortweb site`): the site cannot be written
    ├── LiteError          ortweb.host.build.lite (`ortweb lite`): the site cannot be built
    │                      (also RuntimeError)
    └── UsageError         ortweb.cli: bad command-line input (exit status 2)

Errors of ortweb itself, raised inside the page (``ortweb.OrtWebError`` and its
subclasses), are a separate tree: they are what the Python API says to its users.
"""

from __future__ import annotations

__all__ = [
    "BrowserError",
    "HostError",
    "LiteError",
    "PageFailure",
    "PageUnresponsive",
    "PythonFailure",
    "SiteError",
]


class HostError(Exception):
    """The root of every exception the host tools raise about their own work."""


class BrowserError(HostError, RuntimeError):
    """The browser or a page could not be brought up, or failed while used."""


class PageFailure(BrowserError):
    """A page crashed or closed (or, as :class:`PageUnresponsive`, stopped answering).

    The page is unusable afterwards: close it and open another
    (:class:`ortweb.host.browser.PageKeeper` does both).
    """


class PageUnresponsive(PageFailure):
    """A page did not answer in time: its main thread is stuck (in wasm, or in a
    JavaScript loop), so nothing can run there any more."""


class PythonFailure(HostError, RuntimeError):
    """Python code inside a page raised.

    Parameters
    ----------
    type_ : str
        The Python exception's class name (``'PageError'`` when a site page
        failed before any Python ran).
    traceback : str
        The traceback as Pyodide formatted it, or the error text the page shows.
    message : str, optional
        The exception's text (default: ``traceback``).

    Attributes
    ----------
    type : str
    traceback : str
    """

    def __init__(self, type_: str, traceback: str, message: str | None = None):
        super().__init__(traceback if message is None else message)
        self.type = type_
        self.traceback = traceback


# Each site builder is split over several modules of ortweb.host.build, which all raise
# its error: it lives here, beside the root, and the builder's main module re-exports it.
class SiteError(HostError):
    """``ortweb site`` cannot write the site; the message says why and what to do."""


class LiteError(HostError, RuntimeError):
    """``ortweb lite`` cannot build the site; the message says why and what to do.

    Also a :class:`RuntimeError`, as it was before it joined :class:`HostError`.
    """
