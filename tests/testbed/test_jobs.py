"""Real Gloo jobs on the testbed: a 2-worker ring and a 2-worker parameter server."""

from __future__ import annotations

import json

import pytest
import tensorwire as tw
from tensorwire.testbed import Testbed
from tensorwire.testbed.jobs import JOB_STRATEGIES, hosts_needed, run_job
from tensorwire.testbed.shaping import PAYLOAD_EFFICIENCY
from tensorwire.workload import Layer, Tensor, Workload

pytestmark = [pytest.mark.testbed, pytest.mark.needs_torch]

# Six layers of 2 ms forward and 4 ms backward, each with a 1 MB weight and a 4 kB bias.
TOY = Workload(
    "toy",
    8,
    tuple(Layer(f"l{i}", 0.002, 0.004, (Tensor(f"l{i}.w", 1_000_000), Tensor(f"l{i}.b", 4000))) for i in range(6)),
)


@pytest.mark.parametrize("strategy", ["ring", "ps"])
def test_two_worker_job_reports_plausible_iteration_times(strategy: str) -> None:
    with Testbed(hosts=hosts_needed(strategy, 2), rate="1Gbps") as tb:
        job = run_job(tb, TOY, strategy, iterations=6, warmup=2)
    assert job.workers == 2 and job.hosts == (3 if strategy == "ps" else 2)
    assert len(job.completions_s) == 6 and len(job.iteration_times_s) == 5
    assert all(b > a for a, b in zip(job.completions_s, job.completions_s[1:]))
    # Never faster than the compute, and close to the simulator's uncalibrated prediction.
    assert job.iteration_time_s >= TOY.compute_time_s
    cluster = tw.Cluster(2, tb.rate * PAYLOAD_EFFICIENCY, latency="10us", per_message_overhead="100us")
    predicted = tw.simulate(TOY, cluster, strategy, iterations=5).iteration_time_s
    assert 0.7 * predicted <= job.iteration_time_s <= 1.4 * predicted, (job.iteration_time_s, predicted)
    json.dumps(job.to_dict())  # the report is plain JSON


def test_unknown_strategy_and_too_few_hosts_are_input_errors() -> None:
    assert set(JOB_STRATEGIES) >= {"ring", "ps"}
    with Testbed(hosts=2) as tb:
        with pytest.raises(tw.InputError) as e:
            run_job(tb, TOY, "ps", workers=2)
        assert e.value.args[0] == "workers"
        with pytest.raises(tw.InputError):
            run_job(tb, TOY, "ring", iterations=2, warmup=2)
        with pytest.raises(tw.InputError):
            run_job(tb, TOY, "butterfly")


@pytest.mark.parametrize("strategy,delay", [("ring", 2e-3), ("ps", 20e-3)])
def test_user_space_delay_slows_jobs_as_the_simulator_predicts(strategy: str, delay: float) -> None:
    # ring: 24 all-reduces of 2 steps, each step 2 hops; ps: one push and one pull chain.
    times = {}
    for d in (0.0, delay):
        with Testbed(hosts=hosts_needed(strategy, 2), rate="1Gbps", delay=d) as tb:
            times[d] = run_job(tb, TOY, strategy, iterations=5, warmup=1).iteration_time_s
    measured = times[delay] - times[0.0]

    def predict(latency: float) -> float:
        cluster = tw.Cluster(2, 125e6 * PAYLOAD_EFFICIENCY, latency=latency, per_message_overhead="100us")
        return tw.simulate(TOY, cluster, strategy, iterations=4).iteration_time_s

    predicted = predict(10e-6 + delay) - predict(10e-6)
    assert predicted >= 0.9 * 4 * delay
    print(f"{strategy}: delay added {measured * 1e3:.1f} ms, predicted {predicted * 1e3:.1f} ms")
    assert 0.6 * predicted <= measured <= 1.5 * predicted, (measured, predicted)


@pytest.mark.parametrize("spec", ["ring", "ring:fusion=2MB", "ring:schedule=priority,partition=256KiB,credit=512KiB"])
def test_runtime_job_runs_each_scheduler_mode_close_to_the_prediction(spec: str) -> None:
    """The runtime's ScheduledDataParallel on the testbed: fifo, fusion and priority."""
    with Testbed(hosts=2, rate="1Gbps") as tb:
        job = run_job(tb, TOY, spec, iterations=6, warmup=2, runtime=True)
    assert job.workers == 2 and len(job.completions_s) == 6
    assert all(b > a for a, b in zip(job.completions_s, job.completions_s[1:]))
    assert job.iteration_time_s >= TOY.compute_time_s
    notes = job.ranks[0]["notes"]
    assert notes["runtime"]["mode"] == {"ring": "fifo", "ring:fusion=2MB": "fusion"}.get(spec, "priority")
    # Every rank ran the emulated compute of every iteration.
    assert notes["compute_busy_s"] == pytest.approx(6 * TOY.compute_time_s)
    cluster = tw.Cluster(2, tb.rate * PAYLOAD_EFFICIENCY, latency="10us", per_message_overhead="100us")
    predicted = tw.simulate(TOY, cluster, spec, iterations=5).iteration_time_s
    # The median period, so that one stall of the shared 2-core machine does not decide it
    # (a fresh-clone CI run once measured a 6-iteration mean of 98 ms against 58 ms
    # predicted for priority; five reruns passed, two with a core kept busy); a slow steady
    # state still fails.
    periods = sorted(b - a for a, b in zip(job.completions_s, job.completions_s[1:]))
    typical = periods[len(periods) // 2]
    assert 0.7 * predicted <= typical <= 1.4 * predicted, (periods, predicted)


def test_runtime_refuses_what_it_cannot_run() -> None:
    with Testbed(hosts=3) as tb:
        for spec in ("ps", "ring:compression=4"):
            with pytest.raises(tw.InputError) as e:
                run_job(tb, TOY, spec, runtime=True)
            assert e.value.args[0] == "strategy"
    with Testbed(hosts=2, delay=1e-3) as tb:
        with pytest.raises(tw.InputError) as e:
            run_job(tb, TOY, "ring", runtime=True)
        assert e.value.args[0] == "delay"
