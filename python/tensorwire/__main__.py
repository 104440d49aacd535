"""``python -m tensorwire``: the command line."""

import sys

from tensorwire.cli import main

sys.exit(main())
