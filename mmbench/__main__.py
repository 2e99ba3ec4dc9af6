"""``python -m mmbench``: the ``mmbench`` command."""

import sys

from mmbench.cli import main

sys.exit(main())
