"""``python -m ortweb.cli``."""

import sys

from . import main

sys.exit(main())
