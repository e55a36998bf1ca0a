"""ortweb's host side: the tools that build, serve and drive pages from the host.

Every exception they raise about their own work is a :class:`HostError`
(the tree is drawn in :mod:`ortweb.host.errors`).
"""

from .errors import HostError

__all__ = ["HostError"]
