"""Modules renamed so that each word means one thing; the old import paths still work."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

RENAMED = [
    ("tensorwire.trace", "tensorwire.chrome_trace", "write_trace"),
    ("tensorwire.workloads.trace", "tensorwire.workloads.five_attribute", "parse_trace"),
    ("tensorwire.hardware", "tensorwire.workloads.hardware", "gpu"),
    ("tensorwire.device_stream", "tensorwire.torch.device_stream", "DeviceStream"),
    ("tensorwire.gputopo_cli", "tensorwire.gputopo.cli", "topology"),
    ("tensorwire.gputopo", "tensorwire.gputopo.topology", "Topology"),
]


@pytest.mark.parametrize(("old", "new", "name"), RENAMED)
def test_the_old_path_gives_the_same_object(old: str, new: str, name: str) -> None:
    assert getattr(importlib.import_module(old), name) is getattr(importlib.import_module(new), name)


def test_the_coordinator_keeps_its_old_name() -> None:
    pytest.importorskip("torch")
    from tensorwire.torch.coordinator import Coordinator
    from tensorwire.torch.engine import Engine

    assert Engine is Coordinator


@pytest.mark.parametrize("module", ["tensorwire.gputopo.cli", "tensorwire.gputopo_cli"])
def test_the_topology_command_runs_alone_under_both_names(module: str) -> None:
    out = subprocess.run([sys.executable, "-m", module, "--preset", "pcie-8", "--json"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert '"gpus": 8' in out.stdout
