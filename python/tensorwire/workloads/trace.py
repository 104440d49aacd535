"""Old name of :mod:`tensorwire.workloads.five_attribute`
(the five-attribute trace reader); kept so that old imports keep working."""

from tensorwire.workloads.five_attribute import *  # noqa: F401,F403
