"""The activation estimate against the GPU's allocator: stacks of Llama 3 8B blocks built
from the architecture record (``benchmarks/llm_gpu_check.py``), whose peak of forward +
backward must equal ``llm.peak_activation_bytes`` within 0.01% (on an H200 every reading
but a process's first, which holds cuBLAS's 32 MiB workspace as well, was within 0.002%).

Marked ``cuda``; skipped, with the reason, where torch or a CUDA device is missing."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install 'tensorwire[torch]')")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device on this machine"),
]

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


@pytest.mark.parametrize("recompute", [False, True])
def test_peak_allocated_is_the_estimate(recompute: bool) -> None:
    from llm_gpu_check import measure_memory  # type: ignore[import-not-found]
    from tensorwire.workloads import llm

    a, s, dev = llm.architecture("llama3_8b"), 2048, torch.device("cuda")
    measure_memory(a, 1, s, 1, recompute, dev)  # cuBLAS's workspace allocated, before any reading
    for n in (1, 2):
        r = measure_memory(a, n, s, 2, recompute, dev)
        estimate = llm.peak_activation_bytes(dataclasses.replace(a, layers=n), s, 2, recompute)
        print(f"llama3_8b, {n} blocks, recompute={recompute}: peak {r.peak} B, estimate {estimate} B")
        assert abs(r.peak - estimate) <= 1e-4 * estimate, (n, r.peak, estimate)
