"""The Python API against closed forms, its invariants and the core's equivalences."""

from __future__ import annotations

import json
import math

import pytest
import tensorwire as tw
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tensorwire import Cluster, InputError, Layer, Tensor, Workload, simulate

GBPS8 = 1e9  # bytes/s: 8 Gbps is exactly 1 byte per ns


def one_tensor(nbytes: int) -> Workload:
    return Workload("one", 1, (Layer("l0", 0.0, 0.0, (Tensor("t0", nbytes),)),))


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16, 64])
def test_ring_allreduce_closed_form(n: int) -> None:
    # 2(N-1)(alpha + S/(N B)), alpha = 2 hops of 1 us on a star.
    s = 1000 * n
    r = simulate(one_tensor(s), Cluster(n, GBPS8, latency=1e-6), "ring")
    assert r.iteration_time_s == pytest.approx(2 * (n - 1) * (2e-6 + s / n / GBPS8), rel=1e-9)


def test_single_transfer_is_latency_plus_size_over_bandwidth() -> None:
    # One worker, one server: push and pull, each 2 hops + S/B.
    r = simulate(one_tensor(5000), Cluster(1, GBPS8, latency=1e-8), "ps", iterations=1)
    assert r.completions_s[0] == pytest.approx(2 * (2e-8 + 5000 / GBPS8), rel=1e-9)


@pytest.mark.parametrize("n", [2, 4, 8, 32])
def test_incast_into_one_server(n: int) -> None:
    # N pushes share the server's downlink: N S / B + 2 hops; then N serial pulls of S/B each.
    s, hop = 10_000, 2e-7
    r = simulate(one_tensor(s), Cluster(n, GBPS8, latency=hop), "ps", iterations=1)
    assert r.completions_s[0] == pytest.approx(2 * (n * s / GBPS8 + 2 * hop), rel=1e-6)


def test_ps_baseline_steady_state_on_a_single_tensor() -> None:
    # Derived in crates/tensorwire-core/src/engine/tests.rs: period (N+1) S/B + 2L.
    n, s, path = 4, 10_000, 4e-7
    r = simulate(one_tensor(s), Cluster(n, GBPS8, latency=path / 2), "ps", iterations=4)
    assert r.iteration_time_s == pytest.approx(((n + 1) * s) / GBPS8 + 2 * path, rel=1e-6)


def test_flow_and_analytical_agree_without_contention() -> None:
    w = tw.load_model("resnet50")
    flow = simulate(w, Cluster(8, "10Gbps"), "ring", fold=False)
    analytical = simulate(w, Cluster(8, "10Gbps", network="analytical"), "ring", fold=False)
    assert flow.iteration_time_s == pytest.approx(analytical.iteration_time_s, rel=1e-9)


def test_folding_changes_nothing_but_speed() -> None:
    w = tw.load_model("vgg16")
    folded = simulate(w, Cluster(16, "25Gbps"), "ring:partition=4MiB")
    full = simulate(w, Cluster(16, "25Gbps"), "ring:partition=4MiB", fold=False)
    assert folded.folded and not full.folded
    assert folded.completions_s == full.completions_s
    assert folded.flows * 16 == full.flows


def test_same_inputs_and_seed_give_identical_output() -> None:
    w = tw.load_model("resnet50")
    run = lambda seed: json.dumps(  # noqa: E731
        simulate(w, Cluster(8, "10Gbps"), "ps:num_ps=2", stragglers="lognormal", spread=0.2, seed=seed).to_dict(),
        sort_keys=True,
    )
    assert run(7) == run(7)
    assert run(7) != run(8)


def test_metrics_are_consistent() -> None:
    w = tw.load_model("resnet50")
    r = simulate(w, Cluster(32, "25Gbps"), "ring")
    assert r.compute_time_s == pytest.approx(w.compute_time_s, rel=1e-6)
    assert r.scaling_factor == pytest.approx(r.compute_time_s / r.iteration_time_s, rel=1e-9)
    assert r.throughput_samples_per_s == pytest.approx(32 * w.batch_size / r.iteration_time_s)
    assert r.exposed_comm_s == pytest.approx(r.iteration_time_s - r.compute_time_s, rel=1e-9)
    assert 0 < r.comm_time_s <= r.iteration_time_s * (1 + 1e-9)
    assert len(r.link_utilization) == 64 and all(0 <= u <= 1 for u in r.link_utilization.values())


def test_scaling_factor_of_one_worker_is_one() -> None:
    r = simulate(tw.load_model("resnet50"), Cluster(1, "1Gbps"), "ring")
    assert r.scaling_factor == 1.0


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"workers": 0}, "workers"),
        ({"bandwidth": 0}, "bandwidth"),
        ({"bandwidth": "-1Gbps"}, "bandwidth"),
        ({"bandwidth": "25GB"}, "bandwidth"),
        ({"latency": "5"}, "latency"),
        ({"topology": "torus"}, "topology"),
        ({"topology": "leaf-spine:spines=0"}, "topology.spines"),
        ({"network": "packet"}, "network"),
    ],
)
def test_bad_cluster_input_names_the_field(kwargs: dict[str, object], field: str) -> None:
    args: dict[str, object] = {"workers": 4, "bandwidth": "10Gbps", **kwargs}
    with pytest.raises(InputError) as e:
        Cluster(**args)  # type: ignore[arg-type]
    assert e.value.args[0] == field


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ("allgather", "strategy"),
        ("ring:num_ps=2", "strategy.num_ps"),
        ("ps:placement=random", "strategy.placement"),
        ("ring:partition", "strategy"),
    ],
)
def test_bad_strategy_names_the_field(spec: str, field: str) -> None:
    with pytest.raises(InputError) as e:
        tw.Strategy(spec)
    assert e.value.args[0] == field


sizes = st.lists(st.integers(1, 300_000), min_size=1, max_size=5)
#: Compute per layer (forward; backward twice it): none, or at least the engine's 1 ns (above 0
#: but below it, a workload is refused: it would compute nothing).
computes = st.just(0.0) | st.floats(1e-9, 1e-3)


def workload_of(size_list: list[int], compute: float) -> Workload:
    return Workload(
        "h", 8, tuple(Layer(f"l{i}", compute, 2 * compute, (Tensor(f"t{i}", b),)) for i, b in enumerate(size_list))
    )


def exchanges(w: Workload, n: int, spec: str) -> bool:
    """Whether ``w`` on ``n`` workers under ``spec`` is a run: one worker without compute
    and without a parameter server has nothing to exchange, and is refused."""
    return n > 1 or w.has_compute or tw.Strategy(spec).servers > 0


def tolerance(t: float) -> float:
    """Flow completions are whole nanoseconds (see the Rust property tests)."""
    return 1e-5 * t + 1e-7


@settings(max_examples=40, deadline=None)
@given(
    sizes,
    computes,
    st.integers(1, 8),
    st.sampled_from(["ring", "ps", "ring:partition=64KiB"]),
    st.floats(1.0, 10.0),
)
def test_more_bandwidth_is_never_slower(size_list: list[int], compute: float, n: int, spec: str, factor: float) -> None:
    w = workload_of(size_list, compute)
    assume(exchanges(w, n, spec))
    slow = simulate(w, Cluster(n, 1e9), spec).iteration_time_s
    fast = simulate(w, Cluster(n, 1e9 * factor), spec).iteration_time_s
    assert fast <= slow + tolerance(slow)


@settings(max_examples=40, deadline=None)
@given(
    sizes,
    computes,
    st.integers(1, 8),
    st.sampled_from(["ring", "ps"]),
    st.integers(0, 4),
    st.integers(1, 100_000),
)
def test_bigger_tensors_are_never_faster(
    size_list: list[int], compute: float, n: int, spec: str, which: int, extra: int
) -> None:
    assume(exchanges(workload_of(size_list, compute), n, spec))
    base = simulate(workload_of(size_list, compute), Cluster(n, 1e9), spec).iteration_time_s
    bigger = list(size_list)
    bigger[which % len(bigger)] += extra
    after = simulate(workload_of(bigger, compute), Cluster(n, 1e9), spec).iteration_time_s
    assert after >= base - tolerance(base)


def test_compute_speedup_divides_compute() -> None:
    w = tw.load_model("inception_v3")
    assert w.with_compute_speedup(2.5).compute_time_s == pytest.approx(w.compute_time_s / 2.5)
    with pytest.raises(InputError):
        w.with_compute_speedup(0)
    assert math.isfinite(simulate(w.with_compute_speedup(3), Cluster(4, "10Gbps"), "ring").iteration_time_s)
