"""The task API without torch, and the profile / measure tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire import InputError


# -- no torch needed ---------------------------------------------------------------------
def test_importing_the_package_and_its_cli_never_imports_torch() -> None:
    code = "import sys, tensorwire, tensorwire.torch, tensorwire.torch.cli, tensorwire.torch.tasks; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"


def test_options_are_validated_up_front_with_the_field_named() -> None:
    from tensorwire.torch.tasks import SchedulerConfig

    cases = [
        (dict(mode="ring"), "mode"),
        (dict(mode="priority", partition=0), "partition"),
        (dict(mode="priority", credit="lots"), "credit"),
        (dict(mode="priority", partition=1.5), "partition"),
        (dict(mode="fifo", fusion_cycle_s="1ms"), "fusion_cycle_s"),
        (dict(mode="fusion", fusion_cycle_s=-1.0), "fusion_cycle_s"),
        (dict(mode="priority", in_flight=0), "in_flight"),
    ]
    for kw, field in cases:
        with pytest.raises(InputError) as e:
            SchedulerConfig.make(**kw)  # type: ignore[arg-type]
        assert e.value.args[0] == field, (kw, e.value.args)
    c = SchedulerConfig.make("priority", partition="1MiB", credit="3MB")
    assert (c.partition_bytes, c.credit_bytes) == (2**20, 3_000_000)
    # in_flight caps operations also under a credit; without it the transport's rule holds.
    assert c.for_transport(all_reduce=True).max_groups is None
    assert SchedulerConfig.make("priority", in_flight=2).for_transport(all_reduce=True).max_groups == 2
    assert SchedulerConfig.make("fifo").for_transport(all_reduce=True).max_groups == 1
    # On a stream (collectives one at a time in start order by themselves) everything ready
    # is committed at once; in_flight still bounds it.
    assert SchedulerConfig.make("fifo").for_transport(all_reduce=True, ordered=True).max_groups is None
    assert SchedulerConfig.make("fifo", in_flight=3).for_transport(all_reduce=True, ordered=True).max_groups == 3


def test_in_flight_holds_later_groups_with_the_scheduler_where_priority_applies() -> None:
    from tensorwire.torch.tasks import SchedulerConfig, TaskScheduler

    # Three 8-byte tensors of layers 2, 1, 0 ready in that order; credit for all of them.
    cfg = SchedulerConfig.make("priority", credit=1000, in_flight=1).for_transport(all_reduce=True)
    s = TaskScheduler(cfg, [8, 8, 8], [2, 1, 0])
    s.notify_ready(0, 0)
    (first,) = s.poll()
    s.notify_ready(0, 1)
    s.notify_ready(0, 2)
    assert s.poll() == []  # held: one in flight
    s.notify_finish(first)
    assert [t.tensor for g in s.poll() for _, t in g.tasks] == [2]  # layer 0 overtakes layer 1


def test_the_scheduler_is_the_cores_priority_credit_and_fusion() -> None:
    from tensorwire.torch.tasks import SchedulerConfig, TaskScheduler

    # Tensor 0 (layer 2) is ready first, then tensor 1 (layer 0): with room for one piece
    # in flight, layer 0 overtakes the rest of layer 2.
    s = TaskScheduler(SchedulerConfig.make("priority", partition=8, credit=8), [24, 8], [2, 0], element_bytes=4)
    s.notify_ready(0, 0)
    first = s.poll()
    assert [(t.tensor, t.piece) for _, t in first[0].tasks] == [(0, 0)]
    s.notify_ready(0, 1)
    assert s.poll() == []
    s.notify_finish(first[0])
    assert [(t.tensor, t.piece) for g in s.poll() for _, t in g.tasks] == [(1, 0)]
    # Partition rounds down to whole elements.
    assert TaskScheduler(SchedulerConfig.make("priority", partition=10), [40], [0], element_bytes=4).piece_bytes == 8
    # Fusion: one group of everything once the cycle passes.
    f = TaskScheduler(SchedulerConfig.make("fusion", fusion_bytes=1000, fusion_cycle_s=0.5), [8, 8, 8], [0, 1, 2])
    for t in (2, 1, 0):
        f.notify_ready(0, t, now_s=1.0)
    assert f.poll(1.2) == [] and f.next_deadline() == pytest.approx(1.5)
    (group,) = f.poll(1.5)
    assert [t.tensor for _, t in group.tasks] == [2, 1, 0] and group.nbytes == 24


def test_autotune_validates_its_ranges() -> None:
    from tensorwire.torch.tuning import AutoTune

    with pytest.raises(InputError) as e:
        AutoTune(partition=("4MiB", "1MiB"))
    assert e.value.args[0] == "autotune.partition"
    with pytest.raises(InputError):
        AutoTune(trials=0)


# -- torch ---------------------------------------------------------------------------------
@pytest.mark.needs_torch
def test_profile_writes_a_workload_that_simulate_reads(tmp_path: Path) -> None:
    from click.testing import CliRunner
    from tensorwire.cli import main
    from tensorwire.torch.cli import profile

    out = tmp_path / "r18.json"
    r = CliRunner().invoke(
        profile,
        [
            "resnet18",
            "-o",
            str(out),
            "--batch",
            "2",
            "--input-shape",
            "3x64x64",
            "--iterations",
            "2",
            "--warmup",
            "1",
            "--threads",
            "1",
        ],
    )
    assert r.exit_code == 0, r.output
    w = tw.Workload.from_file(out)
    assert json.loads(out.read_text())["format"] == "tensorwire-workload/1"
    assert w.total_bytes == 11_689_512 * 4, "resnet18's parameters, float32"
    assert w.layers[0].name == "conv1" and w.layers[-1].name == "fc"
    assert all(layer.forward_s >= 0 and layer.backward_s >= 0 for layer in w.layers)
    assert w.compute_time_s > 0
    assert main(["simulate", "--workload", str(out), "-n", "4", "-b", "10Gbps", "-s", "ring", "--json"]) == 0


@pytest.mark.needs_torch
def test_profile_takes_the_users_module_and_inputs() -> None:
    import torch
    from tensorwire.torch import profile

    net = torch.nn.Sequential(torch.nn.Linear(13, 29), torch.nn.Tanh(), torch.nn.Linear(29, 7))
    w = profile(net, batch_size=4, input_shape=(13,), iterations=2, warmup=0, name="mlp")
    assert w.name == "mlp" and [layer.name for layer in w.layers] == ["0", "2"]
    assert [t.bytes for t in w.tensors] == [13 * 29 * 4, 29 * 4, 29 * 7 * 4, 7 * 4]
    with pytest.raises(InputError) as e:
        profile("resnet5")
    assert e.value.args[0] == "model"


@pytest.mark.needs_torch
def test_profile_counts_a_tied_weight_once() -> None:
    """A weight shared by two modules is one gradient, all-reduced once (as DDP and
    ``parameters()`` count it): it was listed under both modules, twice the bytes."""
    import torch
    from tensorwire.torch import profile

    net = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8))
    net[2].weight = net[0].weight
    w = profile(net, batch_size=4, input_shape=(8,), iterations=1, warmup=0)
    assert w.total_bytes == sum(p.numel() * 4 for p in net.parameters()) == (64 + 8 + 8) * 4
    assert [t.name for t in w.tensors] == ["0.weight", "0.bias", "2.bias"]


def _profile_refused(capsys: pytest.CaptureFixture[str], args: list[str], out: Path, needle: str) -> str:
    """``profile ARGS -o OUT`` exits 2 with one line holding ``needle`` and writes nothing."""
    from tensorwire.cli import main

    assert main(["profile", *args, "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tensorwire: error: ") and "Traceback" not in err, err
    assert needle in err, err
    assert not out.exists()
    return err


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "spec, why",
    [
        ("torch.nn:Linear", "'torch.nn:Linear' needs arguments (missing a required argument: 'in_features')"),
        ("os:system", "'os:system' needs arguments (missing a required argument: 'command')"),
        ("math:pi", "'math:pi' is a float, not callable"),
        ("os:getcwd", "'os:getcwd' returned str, not a torch.nn.Module"),
    ],
)
def test_profile_refuses_a_model_that_is_not_a_module_factory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, why: str
) -> None:
    allowed = "or package.module:factory, a callable that builds a torch.nn.Module with no arguments"
    err = _profile_refused(capsys, [spec], tmp_path / "p.json", f"tensorwire: error: model: {why}; ")
    assert allowed in err


@pytest.mark.needs_torch
def test_profile_names_a_factory_that_fails_and_a_spec_without_a_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The user's factory raising, and ``:foo``, were tracebacks (exit 1)."""
    import types

    def boom() -> None:
        raise RuntimeError("boom")

    factories = types.ModuleType("tw_test_factories")
    factories.boom = boom  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tw_test_factories", factories)
    _profile_refused(
        capsys, ["tw_test_factories:boom"], tmp_path / "a.json", "'tw_test_factories:boom' raised RuntimeError: boom"
    )
    _profile_refused(capsys, [":foo"], tmp_path / "b.json", "cannot load ':foo': Empty module name")


@pytest.mark.needs_torch
def test_profile_names_the_input_shape_a_model_rejects(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["resnet18", "--batch", "2", "--input-shape", "5x32x32", "--iterations", "1", "--warmup", "0"]
    needle = (
        "tensorwire: error: input_shape: resnet18 rejected inputs of shape 5x32x32 (batch 2): "
        "Given groups=1, weight of size [64, 3, 7, 7], expected input[2, 5, 32, 32] to have 3 channels"
    )
    _profile_refused(capsys, args, tmp_path / "p4.json", needle)


@pytest.mark.needs_torch
@pytest.mark.distributed
def test_measure_reports_scaling_factor_and_network_throughput() -> None:
    from click.testing import CliRunner
    from tensorwire.torch.cli import measure

    args = ["--model", "zoo:alexnet", "--size-scale", "0.02", "--time-scale", "0.1", "-n", "2", "--iterations", "5",
            "--warmup", "2", "--link-rate", "1Gbps", "--json"]  # fmt: skip
    r = CliRunner().invoke(measure, args)
    assert r.exit_code == 0, r.output
    m = json.loads(r.output)
    assert m["workers"] == 2 and 0 < m["scaling_factor"] < 1.5
    assert m["batch_size"] == tw.load_model("alexnet").batch_size  # the zoo's: its compute times' batch
    grad = m["gradient_bytes"]
    assert 0.02 * 0.9 * tw.load_model("alexnet").total_bytes < grad < 0.02 * 1.1 * tw.load_model("alexnet").total_bytes
    assert m["bytes_per_iteration"] == pytest.approx(grad), "ring: 2(N-1)/N = 1 x the gradient bytes for N=2"
    assert m["network_throughput"] == pytest.approx(grad / m["iteration_time_n_s"])
    assert m["utilization"] == pytest.approx(m["network_throughput"] / 125e6)


@pytest.mark.distributed
@pytest.mark.needs_torch
def test_the_runtime_stream_runs_collectives_one_at_a_time_in_start_order() -> None:
    import _runtime_jobs as jobs
    from tensorwire.torch import run_local

    results = run_local(jobs.stream_order, 3, timeout_s=120)
    expected = (2.0, 2.0)  # (1 + 2 + 3) / 3 on every element
    for r in results:
        assert r["stream"]["ordered"] and not r["group"]["ordered"]
        assert r["stream"]["averages"] == expected and r["group"]["averages"] == expected
        # The tiny all-reduce started second cannot end before the big one on the stream.
        assert r["stream"]["big_done_first"]
    # On an ordinary Gloo group (two worker threads) the tiny one overtakes the big one:
    # the property the stream exists for is not a given.
    assert not all(r["group"]["big_done_first"] for r in results)


@pytest.mark.needs_torch
@pytest.mark.parametrize(
    "fields, field",
    [
        ({"model": "zoo:nonexist"}, "model"),
        ({"model": "nonexist"}, "model"),
        ({"model": "zoo:alexnet", "size_scale": 0.0}, "size_scale"),
        ({"model": "zoo:alexnet", "size_scale": float("nan")}, "size_scale"),
        ({"model": "zoo:alexnet", "size_scale": 0.001, "time_scale": -1.0}, "time_scale"),
        ({"model": "resnet18", "input_shape": (3, 8, 8), "batch_size": 1}, "input_shape"),
        # Options that applied to nothing (measured alike, or samples/s from a batch not run).
        ({"model": "zoo:vgg16", "batch_size": 1}, "batch_size"),
        ({"model": "zoo:vgg16", "input_shape": (3, 8, 8)}, "input_shape"),
        ({"model": "resnet18", "size_scale": 0.5}, "size_scale"),
        ({"model": "resnet18", "mode": "ddp", "partition": "1MiB"}, "partition"),
    ],
)
def test_measure_refuses_a_job_before_starting_a_process(fields: dict[str, object], field: str) -> None:
    """These were tracebacks from inside the worker processes (exit 1), ``time_scale`` named
    ``size_scale``; ``measure`` now builds the model and runs one forward pass first."""
    from tensorwire.torch.measuring import Job, check_job

    with pytest.raises(InputError) as e:
        check_job(Job(**fields))  # type: ignore[arg-type]
    assert e.value.args[0] == field


@pytest.mark.needs_torch
@pytest.mark.distributed
def test_measure_counts_the_loopback_per_process_and_refuses_another_interface() -> None:
    """The processes talk over 127.0.0.1: ``lo`` carries all of their bytes (rank 0 had
    reported all of them as its own), another interface none (it gave 0 bytes/s)."""
    from tensorwire.torch.measuring import Job, measure

    job = Job(model="zoo:alexnet", mode="fifo", size_scale=0.01, time_scale=0.1, iterations=3, warmup=1, interface="lo")
    m = measure(job, 2)
    # Two ring ranks each send 2(N-1)/N = 1 x the gradient bytes, plus the control messages.
    assert m.gradient_bytes <= m.bytes_per_iteration < 1.3 * m.gradient_bytes, m
    assert m.bytes_counted_on == "interface lo (tx of all 2 processes / 2)"
    others = [p.name for p in Path("/sys/class/net").iterdir() if p.name != "lo"]
    if others:
        with pytest.raises(InputError) as e:
            measure(Job(model="zoo:alexnet", interface=others[0]), 2)
        assert e.value.args[0] == "interface" and "talk over 127.0.0.1" in e.value.args[1]
