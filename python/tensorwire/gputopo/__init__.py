"""GPU machines: which links join a machine's GPUs, and the reduction trees tree all-reduce uses.

:mod:`tensorwire.gputopo.topology` holds the model (:class:`Topology`, presets, detection,
trees and plans); :mod:`tensorwire.gputopo.cli` the ``tensorwire topology`` command. The
names below are re-exported so that ``from tensorwire.gputopo import Topology`` keeps working.
"""

from tensorwire.gputopo.topology import (
    DEFAULT_ARRAY_BOUND,
    DEFAULT_PENALTY,
    LINK_NAMES,
    PRESETS,
    Plan,
    Step,
    Topology,
    Transfer,
    Tree,
    TreeEdge,
    nvlink_weight,
    nvml_adjacency,
    parse_nvidia_smi_topo,
)

__all__ = [
    "DEFAULT_ARRAY_BOUND",
    "DEFAULT_PENALTY",
    "LINK_NAMES",
    "PRESETS",
    "Plan",
    "Step",
    "Topology",
    "Transfer",
    "Tree",
    "TreeEdge",
    "nvlink_weight",
    "nvml_adjacency",
    "parse_nvidia_smi_topo",
]
