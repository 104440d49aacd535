"""Old name of :mod:`tensorwire.chrome_trace`
(Chrome trace output); kept so that old imports keep working."""

from tensorwire.chrome_trace import *  # noqa: F401,F403
