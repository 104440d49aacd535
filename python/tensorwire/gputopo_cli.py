"""Old name of :mod:`tensorwire.gputopo.cli` (the ``tensorwire topology`` command); kept so
that old imports and ``python -m tensorwire.gputopo_cli`` keep working."""

import sys

from tensorwire.gputopo.cli import *  # noqa: F401,F403
from tensorwire.gputopo.cli import main

if __name__ == "__main__":
    sys.exit(main())
