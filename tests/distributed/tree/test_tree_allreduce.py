"""tree_allreduce equals torch's all_reduce on 2 to 8 Gloo processes; the DDP hook and the
scheduler transport average like all-reduce. Real processes on 127.0.0.1 (spawned)."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

pytestmark = [
    pytest.mark.distributed,
    pytest.mark.skipif(
        importlib.util.find_spec("torch") is None, reason="torch is not installed (pip install 'tensorwire[torch]')"
    ),
]


def _run(world: int, *names: str) -> dict[str, list[str]]:
    import _tree_jobs as jobs
    from tensorwire.torch.launch import run_local

    out: list[dict[str, Any]] = run_local(jobs.run_all, world, list(names), timeout_s=600, pg_timeout_s=300)
    merged: dict[str, list[str]] = {name: [] for name in names}
    for result in out:
        for name, failures in result.items():
            merged[name].extend(failures)
    return merged


def test_tree_allreduce_equals_all_reduce_on_2_to_8_processes() -> None:
    """One job of 8 processes: groups of 2, 3, ..., 8 ranks and the scattered group {1, 3, 6};
    sizes 0, 1, 7, 1000, 12345 (the last two above the lowered bound of 1000, so on 3 trees
    and on one per GPU); float32, float64, int64; then the default group, a transposed
    tensor, random floats and a wrong-sized topology."""
    failures = _run(8, "equals_all_reduce", "default_group_and_shapes")
    assert failures == {"equals_all_reduce": [], "default_group_and_shapes": []}


def test_ddp_hook_and_scheduler_transport_average_like_all_reduce() -> None:
    failures = _run(3, "ddp_hook_matches_default", "transport_averages")
    assert failures == {"ddp_hook_matches_default": [], "transport_averages": []}
