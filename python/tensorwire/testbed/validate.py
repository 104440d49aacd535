"""Validation: the same scenarios measured on the testbed and predicted by the simulator.

A scenario is a workload, a strategy, a number of workers and a link rate. Strategies are
the testbed's own jobs (``ring``: one Gloo all-reduce per tensor, FIFO; ``ps``: parameter
server on a host of its own) and the runtime's scheduler modes (``fifo``, ``fusion``,
``priority``: :class:`tensorwire.torch.ScheduledDataParallel` itself, through
:mod:`tensorwire.testbed.jobs.runtime`), each with the simulator spec of the same policy
(:func:`Scenario.spec`). For each
(rate, workers) pair the matrix builds one testbed (workers + 1 hosts, so a parameter
server fits), calibrates it (:func:`tensorwire.testbed.calibrate.calibrate`) and runs every
scenario of that pair as a real job; :func:`tensorwire.simulate` predicts the same
workload on the calibrated cluster. The rates and the latency come from the calibration;
the per-message overheads from a probe the job's own processes run just before and just
after training (:mod:`tensorwire.testbed.jobs.probe`; their mean), because Gloo's software
cost on a shared machine drifts between a calibration and a job minutes later. ``error`` is
``(predicted - measured) / measured``.

Workloads are the zoo's VGG-16 (32 tensors, one of 74% of the bytes) and ResNet-50 (161
tensors, half of them under 2 KiB), scaled so that each iteration takes about half a
second: gradient bytes so that the strategy's traffic on its busiest link takes
``COMM_TARGET_S`` at the calibrated rate, compute times so that forward plus backward take
``COMPUTE_TARGET_S``. The simulator gets exactly the scaled workload the testbed runs.
"""

from __future__ import annotations

import functools
import math
import os
import statistics
import time
from dataclasses import dataclass
from typing import Any, Callable, Optional, Sequence

from tensorwire._core import InputError
from tensorwire.api import simulate
from tensorwire.strategy import with_options
from tensorwire.units import format_rate, to_rate
from tensorwire.workload import Layer, Tensor, Workload
from tensorwire.workloads import load_model

#: Base workloads: name in scenario ids -> zoo model.
WORKLOADS = {"vgg": "vgg16", "resnet": "resnet50"}
#: Time the strategy's traffic on its busiest link takes at the calibrated rate, seconds.
COMM_TARGET_S = 0.25
#: Forward plus backward compute per iteration, seconds.
COMPUTE_TARGET_S = 0.2
#: (rate, workers) pairs of the full matrix; each runs both workloads under every strategy
#: (the runtime's modes only up to :func:`runtime_max_workers` workers).
FULL_MATRIX = (("1Gbps", 2), ("100Mbps", 2), ("100Mbps", 4), ("400Mbps", 8), ("1Gbps", 8))
QUICK_MATRIX = (("1Gbps", 2),)
#: Scenario strategies: the testbed's own jobs, then the runtime's scheduler modes.
STRATEGIES = ("ring", "ps", "fifo", "fusion", "priority")
#: The runtime's modes (run by ``ScheduledDataParallel``; all-reduce traffic).
RUNTIME_MODES = ("fifo", "fusion", "priority")
QUICK_STRATEGIES = ("ring", "ps", "priority")
#: ``priority``'s piece size and ``fusion``'s buffer, as fractions of the scaled model's
#: bytes (so that every scale has several pieces and several fused groups); the credit is
#: two pieces.
PRIORITY_PARTITION_SHARE = 1 / 16
FUSION_SHARE = 1 / 4
#: Measurement quality. A job whose steady-state iteration times vary by more than
#: MAX_SPREAD (coefficient of variation), or whose predictions from the probe before and
#: from the probe after training differ by more than MAX_PROBE_DRIFT of the prediction, ran
#: while the shared machine changed speed (other guests of the VM's host): the scenario runs
#: again, up to MAX_ATTEMPTS times in all, and the steadiest attempt is kept (every attempt
#: is listed in the result's ``attempts``). The prediction's error plays no part.
MAX_SPREAD = 0.05
MAX_PROBE_DRIFT = 0.05
MAX_ATTEMPTS = 3
#: What each attempt records in ``attempts``.
ATTEMPT_FIELDS = ("measured_s", "predicted_s", "error", "spread", "probe_drift", "wall_s")
#: CPU cores this process may use (recorded with every result).
CORES = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
#: Most workers of a runtime scenario whatever the cores (8 runtime processes, four busy
#: threads each, measured the CPU on 2 cores: fifo/resnet 3.1 s against 1.1 s for the
#: testbed's own ring job).
RUNTIME_WORKER_CAP = 4


def runtime_max_workers(cores: int = CORES) -> int:
    """Most emulated hosts a runtime scenario runs on: one core per host, at least 2.

    The runtime's per-collective work is CPU on every host (leader decision, follower
    issue, waiter update: 0.2-0.5 ms a collective), taken while its collectives run. With a
    core per host that work overlaps the network as on real machines and the simulator's
    ``dispatch`` describes it; with more hosts than cores the hosts take the work from each
    other's collectives and the scenario measures the machine's scheduler (4 hosts on 2
    cores, six full runs: fifo/resnet +2% to +13%, priority/resnet +3% to -12%).

    >>> runtime_max_workers(2), runtime_max_workers(4), runtime_max_workers(64)
    (2, 4, 4)
    """
    return max(2, min(cores, RUNTIME_WORKER_CAP))


@dataclass(frozen=True)
class Scenario:
    """One cell of the matrix."""

    workload: str
    strategy: str
    workers: int
    rate: str

    @property
    def id(self) -> str:
        """``ring/vgg/4x100Mbps``-style name."""
        return f"{self.strategy}/{self.workload}/{self.workers}x{self.rate}"

    @property
    def runtime(self) -> bool:
        """Whether the runtime (``ScheduledDataParallel``) runs it."""
        return self.strategy in RUNTIME_MODES

    def spec(self, model_bytes: int) -> str:
        """The strategy spec the testbed runs and the simulator predicts, for a model of
        ``model_bytes`` gradient bytes.

        >>> Scenario("vgg", "priority", 2, "1Gbps").spec(16 << 20)
        'ring:schedule=priority,partition=1024KiB,credit=2048KiB'
        >>> Scenario("vgg", "fusion", 2, "1Gbps").spec(16 << 20)
        'ring:fusion=4096KiB,cycle=5ms'
        """
        if self.strategy == "priority":
            piece = _kib(model_bytes * PRIORITY_PARTITION_SHARE)
            return f"ring:schedule=priority,partition={piece}KiB,credit={2 * piece}KiB"
        if self.strategy == "fusion":
            return f"ring:fusion={_kib(model_bytes * FUSION_SHARE)}KiB,cycle=5ms"
        return "ring" if self.strategy == "fifo" else self.strategy


def _kib(nbytes: float) -> int:
    return max(4, int(round(nbytes / 1024)))


def scenarios(quick: bool) -> list[Scenario]:
    """The matrix: every (rate, workers) pair x workload x strategy."""
    return [sc for rate, workers in (QUICK_MATRIX if quick else FULL_MATRIX) for sc in _cells(rate, workers, quick)]


def _cells(rate: str, workers: int, quick: bool) -> list[Scenario]:
    """The scenarios of one (rate, workers) pair."""
    strategies = QUICK_STRATEGIES if quick else STRATEGIES
    cells = [Scenario(w, s, workers, rate) for w in WORKLOADS for s in strategies]
    return [sc for sc in cells if not sc.runtime or workers <= runtime_max_workers()]


#: Smallest scaled tensor, bytes (unless the original is smaller): 256 float32 elements.
MIN_TENSOR_BYTES = 1024


def scale_workload(base: Workload, bytes_scale: float, time_scale: float, name: Optional[str] = None) -> Workload:
    """``base`` with every tensor's bytes times ``bytes_scale`` and every compute time times
    ``time_scale``.

    Sizes are rounded to whole float32 elements and kept at least ``MIN_TENSOR_BYTES`` (or
    the original size, if smaller): scaling a 64-element bias by 1/100 would leave less
    than one element per ring segment, where Gloo skips empty segments and the cost of a
    message is no longer the one calibration measures (2N segments of at least 16 floats
    for up to 8 workers).
    """
    if not bytes_scale > 0 or not time_scale > 0:
        raise InputError("scale", "scales must be > 0")

    def size(b: int) -> int:
        return max(min(b, MIN_TENSOR_BYTES), 4, int(round(b * bytes_scale / 4)) * 4)

    layers = tuple(
        Layer(
            layer.name,
            layer.forward_s * time_scale,
            layer.backward_s * time_scale,
            tuple(Tensor(t.name, size(t.bytes)) for t in layer.tensors),
        )
        for layer in base.layers
    )
    return Workload(
        name or base.name,
        base.batch_size,
        layers,
        f"{base.name} scaled: bytes x{bytes_scale:.3g}, time x{time_scale:.3g}",
        dtype_bytes=base.dtype_bytes,
    )


def scenario_workload(sc: Scenario, effective_rate: float) -> Workload:
    """The scaled workload of a scenario (see the module documentation)."""
    base = load_model(WORKLOADS[sc.workload])
    n = sc.workers
    # Bytes of the model whose traffic fills the busiest link for COMM_TARGET_S.
    if sc.strategy == "ps":
        model_bytes = COMM_TARGET_S * effective_rate / n  # the server's link carries N copies
    else:
        model_bytes = COMM_TARGET_S * effective_rate * n / (2 * (n - 1)) if n > 1 else COMM_TARGET_S * effective_rate
    return scale_workload(
        base, model_bytes / base.total_bytes, COMPUTE_TARGET_S / base.compute_time_s, name=f"{sc.workload}-scaled"
    )


def validate(
    quick: bool = False,
    *,
    matrix: Optional[Sequence[tuple[str, int]]] = None,
    iterations: int = 10,
    warmup: int = 2,
    progress: Optional[Callable[[str], None]] = None,
) -> list[dict[str, Any]]:
    """Runs the matrix on the testbed and in the simulator; one dict per scenario.

    Each dict has ``scenario``, ``measured_s``, ``predicted_s`` and ``error`` (relative,
    (predicted - measured) / measured), plus the scenario's parameters, the measured
    iteration times, the predictions from each probe alone and their relative difference
    (``probe_drift``), the calibration used and every attempt (a scenario
    whose machine changed speed during the job runs again: ``MAX_SPREAD``,
    ``MAX_PROBE_DRIFT``). ``matrix`` overrides the (rate, workers) pairs. Needs root and
    torch; takes about two minutes with ``quick``.
    """
    from tensorwire.testbed.calibrate import calibrate
    from tensorwire.testbed.jobs import hosts_needed
    from tensorwire.testbed.testbed import Testbed

    pairs = list(matrix) if matrix is not None else list(QUICK_MATRIX if quick else FULL_MATRIX)
    for rate, workers in pairs:
        to_rate(rate, "rate")
        if isinstance(workers, bool) or not isinstance(workers, int) or workers < 2:
            raise InputError("workers", f"{workers!r} must be an integer >= 2")
    from tensorwire.testbed.jobs.launcher import require_torch

    require_torch()
    say = progress or (lambda _: None)
    results: list[dict[str, Any]] = []
    for rate, workers in pairs:
        cells = _cells(rate, workers, quick)
        hosts = max(hosts_needed(s.spec(1 << 20), workers) for s in cells)
        with Testbed(hosts=hosts, rate=rate) as tb:
            say(f"calibrating {hosts} hosts at {format_rate(tb.rate)}")
            cal = calibrate(tb, quick=quick, workers=workers)
            for sc in cells:
                say(f"running {sc.id}")
                best = steadiest(functools.partial(_run_scenario, tb, cal, sc, iterations, warmup), say)
                results.append(best)
                say(
                    f"{sc.id}: measured {best['measured_s']:.4f} s, predicted {best['predicted_s']:.4f} s, error {best['error']:+.1%}"
                )
    return results


def _run_scenario(tb: Any, cal: Any, sc: Scenario, iterations: int, warmup: int) -> dict[str, Any]:
    """Runs one scenario on the testbed and predicts it; the result row (see :func:`validate`)."""
    from tensorwire.testbed.jobs import run_job

    workload = scenario_workload(sc, cal.effective_rate_bytes_per_s)
    spec = sc.spec(workload.total_bytes)
    started = time.monotonic()
    job = run_job(
        tb, workload, spec, workers=sc.workers, iterations=iterations, warmup=warmup, probe=True, runtime=sc.runtime
    )
    steps = max(3, iterations - warmup + 1)
    used, predicted_spec, predicted = _predict(cal, sc, workload, spec, job.probe, steps)
    # The same prediction with each probe alone: how far the machine's drift moves it.
    sides = [_predict(cal, sc, workload, spec, probe_side(job.probe, side), steps)[2] for side in ("before", "after")]
    measured = job.iteration_time_s
    return {
        "scenario": sc.id,
        "workload": sc.workload,
        "strategy": sc.strategy,
        "spec": spec,
        "predicted_spec": predicted_spec,
        "runtime": sc.runtime,
        "cores": CORES,
        "workers": sc.workers,
        "rate_bps": tb.rate * 8,
        "model_bytes": workload.total_bytes,
        "tensors": len(workload.tensors),
        "compute_s": workload.compute_time_s,
        "measured_s": measured,
        "predicted_s": predicted,
        "error": (predicted - measured) / measured,
        "iteration_times_s": list(job.iteration_times_s),
        "spread": _spread(job.iteration_times_s[warmup - 1 :]),
        "predicted_before_after_s": sides,
        "probe_drift": abs(sides[1] - sides[0]) / predicted if predicted > 0 else 0.0,
        "wall_s": time.monotonic() - started,
        "calibration": {
            "payload_efficiency": used.payload_efficiency,
            "ring_efficiency": used.ring_efficiency,
            "bandwidth_bytes_per_s": used.bandwidth(spec),
            "latency_s": used.latency_s,
            "per_message_overhead_s": used.per_message_overhead(spec),
            "calibrated_overhead_s": cal.per_message_overhead(spec),
            "probe": job.probe,
        },
    }


def _predict(
    cal: Any, sc: Scenario, workload: Workload, spec: str, probe: dict[str, Any], iterations: int
) -> tuple[Any, str, float]:
    """(calibration with ``probe``, the spec predicted, predicted iteration time in s)."""
    used = cal.with_probe(probe)
    on_transport = used.spec(spec)
    predicted_spec = runtime_prediction_spec(on_transport, probe) if sc.runtime else on_transport
    result = simulate(workload, used.cluster(sc.workers, spec), predicted_spec, iterations=iterations)
    return used, predicted_spec, result.iteration_time_s


def probe_side(probe: dict[str, Any], side: str) -> dict[str, Any]:
    """The job's probe as measured ``side`` (``"before"`` or ``"after"``) training alone
    (the probe holds their means, and each as measured).

    >>> probe_side({"allreduce_s": {"1": 2.0}, "before": {"allreduce_s": {"1": 1.0}}, "after": {"allreduce_s": {"1": 3.0}},
    ...             "dispatch": {"dispatch_s": 2.0, "before": {"dispatch_s": 1.0}, "after": {"dispatch_s": 3.0}}}, "after")
    {'allreduce_s': {'1': 3.0}, 'dispatch': {'dispatch_s': 3.0}}
    """
    if side not in probe:
        return probe
    out = dict(probe[side])
    if "dispatch" in probe:
        out["dispatch"] = dict(probe["dispatch"].get(side, probe["dispatch"]))
    return out


def steadiest(attempt: Callable[[], dict[str, Any]], say: Callable[[str], None] = lambda _: None) -> dict[str, Any]:
    """Runs ``attempt`` (one scenario on the testbed, returning its result row) until a run
    is steady or ``MAX_ATTEMPTS`` ran; returns the steadiest row, with every attempt's
    summary in its ``attempts``. Steady: iteration spread at most ``MAX_SPREAD`` and
    predictions from the probes before and after training within ``MAX_PROBE_DRIFT`` of
    each other; the prediction's error plays no part.

    >>> rows = iter([{"scenario": "s", "measured_s": 1.3, "predicted_s": 1.0, "error": -0.23, "spread": 0.08,
    ...               "probe_drift": 0.0, "wall_s": 9.0},
    ...              {"scenario": "s", "measured_s": 1.1, "predicted_s": 1.0, "error": -0.09, "spread": 0.02,
    ...               "probe_drift": 0.03, "wall_s": 9.0}])
    >>> best = steadiest(lambda: next(rows))
    >>> best["spread"], [a["spread"] for a in best["attempts"]]
    (0.02, [0.08, 0.02])
    """
    attempts: list[dict[str, Any]] = []
    while True:
        attempts.append(attempt())
        row = attempts[-1]
        if _unsteadiness(row) <= 1.0 or len(attempts) == MAX_ATTEMPTS:
            break
        say(f"{row['scenario']}: the machine changed speed during the job (iteration spread {row['spread']:.1%}, "
            f"predictions from the probes before and after {row['probe_drift']:.1%} apart): running it again")  # fmt: skip
    best = min(attempts, key=_unsteadiness)
    best["attempts"] = [{k: a[k] for k in ATTEMPT_FIELDS} for a in attempts]
    return best


def _unsteadiness(row: dict[str, Any]) -> float:
    """The larger of the row's iteration spread and probe drift, each over its limit
    (above 1: the machine's speed moved during the job)."""
    return max(float(row["spread"]) / MAX_SPREAD, float(row["probe_drift"]) / MAX_PROBE_DRIFT)


def runtime_prediction_spec(spec: str, probe: dict[str, Any]) -> str:
    """``spec`` as the simulator should predict a runtime job.

    The runtime runs its all-reduces on a stream (one Gloo worker thread: one collective at
    a time, in the order the leader committed them; the credit bounds what is committed
    ahead), so the prediction uses ``execution=stream``, with the runtime's measured cost
    per collective (``dispatch``, from the job's dispatch probe,
    :func:`tensorwire.testbed.jobs.runtime.probe_dispatch`): it overlaps the collective
    before it and paces the stream (collectives start at least one dispatch apart).

    >>> runtime_prediction_spec("ring:segments=pipelined", {"dispatch": {"dispatch_s": 0.00042}})
    'ring:segments=pipelined,execution=stream,dispatch=420.0us'
    >>> runtime_prediction_spec("ring:schedule=priority,partition=1MiB,credit=2MiB", {})
    'ring:schedule=priority,partition=1MiB,credit=2MiB,execution=stream'
    """
    extra = ["execution=stream"]
    if "dispatch" in probe:
        extra.append(f"dispatch={probe['dispatch']['dispatch_s'] * 1e6:.1f}us")
    return with_options(spec, *extra)


def _spread(xs: Sequence[float]) -> float:
    """Coefficient of variation of the steady-state iteration times."""
    xs = list(xs)
    if len(xs) < 2:
        return 0.0
    mean = statistics.fmean(xs)
    return statistics.pstdev(xs) / mean if mean > 0 else 0.0


def summary(results: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Median and largest absolute error, and the scenarios within 10% (count and share)."""
    errors = [abs(r["error"]) for r in results if math.isfinite(r["error"])]
    if not errors:
        return {"scenarios": 0, "median_abs_error": math.nan, "max_abs_error": math.nan, "within_10pct": math.nan,
                "within_10pct_count": 0}  # fmt: skip
    within = sum(within_10pct(e) for e in errors)
    return {
        "scenarios": len(errors),
        "median_abs_error": statistics.median(errors),
        "max_abs_error": max(errors),
        "within_10pct": within / len(errors),
        "within_10pct_count": within,
    }


def within_10pct(error: float) -> bool:
    """Whether a relative error meets the fidelity bar (10%; NaN does not)."""
    return abs(error) <= 0.10
