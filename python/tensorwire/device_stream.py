"""Old name of :mod:`tensorwire.torch.device_stream`
(the emulated device stream); kept so that old imports keep working."""

from tensorwire.torch.device_stream import *  # noqa: F401,F403
