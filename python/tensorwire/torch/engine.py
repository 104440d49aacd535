"""Old name of :mod:`tensorwire.torch.coordinator` (the runtime's leader/follower
coordination; ``Engine`` is now ``Coordinator``); kept so that old imports keep working."""

from tensorwire.torch.coordinator import *  # noqa: F401,F403
