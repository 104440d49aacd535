"""Old name of :mod:`tensorwire.workloads.hardware`
(GPU profiles for the LLM workloads); kept so that old imports keep working."""

from tensorwire.workloads.hardware import *  # noqa: F401,F403
