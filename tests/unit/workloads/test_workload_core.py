"""``Workload.core``: the core's workload (``tensorwire._core.Workload``), built once from
the Python workload and taken as is by every run; it holds the same values, and a workload
the core refuses is refused with the same ``InputError`` as a run refused it."""

from __future__ import annotations

import copy
import pickle

import pytest
import tensorwire as tw
from tensorwire import _core
from tensorwire._core import InputError

HORIZON = "s is past the simulation horizon; durations must be below 9007199 s (2^53 ns, 104 days)"


def _past_horizon() -> tw.Workload:
    # Python's Layer takes any finite time >= 0; only the core knows the horizon.
    return tw.Workload("toy", 8, (tw.Layer("fc", 0.001, 2e8, (tw.Tensor("fc.weight", 4000),)),))


@pytest.mark.parametrize("name", ["vgg16", "llama3_8b"])
def test_the_core_workload_holds_the_python_values(name: str) -> None:
    w = tw.load_model(name)
    core = w.core
    assert isinstance(core, _core.Workload)
    assert (core.name, core.batch_size, core.dtype_bytes, core.collective) == (
        w.name,
        w.batch_size,
        w.dtype_bytes,
        w.collective_kind,
    )
    assert core.total_bytes == w.total_bytes
    assert len(core.layers) == len(w.layers)
    assert [n for n, _, _ in core.layers] == [layer.name for layer in w.layers]
    assert [(n, b) for n, b, _ in core.tensors] == [(t.name, t.bytes) for t in w.tensors]
    # Seconds cross as integer ns and back: equal to within half a nanosecond.
    for (_, f, b), layer in zip(core.layers, w.layers):
        assert f == pytest.approx(layer.forward_s, abs=5e-10)
        assert b == pytest.approx(layer.backward_s, abs=5e-10)
    assert w.core is core  # built once


def test_a_collective_microbenchmark_keeps_its_collective_and_element_size() -> None:
    w = tw.Workload.collective("allgather:64MiBx3")
    assert (w.core.collective, w.core.dtype_bytes, w.core.total_bytes) == ("allgather", w.dtype_bytes, 3 * 64 * 2**20)


@pytest.mark.parametrize("spec", ["allreduce:1MiBx50", "alltoall:3KB", "broadcast:1Bx2"])
def test_a_collective_built_unchecked_equals_the_checked_workload(spec: str) -> None:
    """``Workload.collective`` builds its objects without their checks (the core built them);
    the result is the workload the checked constructors give, and its core object that
    workload's (also after a pickle, which drops the core object)."""
    w = tw.Workload.collective(spec)
    checked = tw.Workload(
        w.name,
        w.batch_size,
        tuple(
            tw.Layer(x.name, x.forward_s, x.backward_s, tuple(tw.Tensor(t.name, t.bytes) for t in x.tensors))
            for x in w.layers
        ),  # fmt: skip
        w.description,
        w.sources,
        w.dtype_bytes,
        w.collective_kind,
    )
    assert w == checked and hash(w) == hash(checked) and repr(w) == repr(checked)
    assert w.core.total_bytes == checked.core.total_bytes and repr(w.core) == repr(checked.core)
    assert pickle.loads(pickle.dumps(w)) == checked


def test_the_core_object_changes_no_equality_hash_repr_or_pickle() -> None:
    w, fresh = tw.load_model("resnet50"), tw.load_model("resnet50")
    before = repr(w)
    _ = w.core
    assert w == fresh and hash(w) == hash(fresh) and repr(w) == before
    for other in (pickle.loads(pickle.dumps(w)), copy.deepcopy(w), copy.copy(w)):
        assert other == w and repr(other) == before
        assert other.core.total_bytes == w.total_bytes


def test_a_workload_the_core_refuses_is_refused_when_built_as_a_run_refused_it() -> None:
    w = _past_horizon()
    with pytest.raises(InputError) as built:
        _ = w.core
    assert built.value.args == ("workload.layers[0].backward_s", f"200000000 {HORIZON}")
    with pytest.raises(InputError) as ran:
        tw.simulate(w, tw.Cluster(4, "25Gbps"), "ring")
    assert ran.value.args == built.value.args
    with pytest.raises(InputError) as jobs:
        tw.simulate_jobs(
            [tw.Job("a", tw.load_model("vgg16"), 2, "ring"), tw.Job("b", w, 2, "ring")], tw.Cluster(4, "25Gbps")
        )
    assert jobs.value.args == ("jobs[1].workload.layers[0].backward_s", f"200000000 {HORIZON}")


def test_the_core_class_refuses_what_the_tuple_refused() -> None:
    with pytest.raises(InputError) as e:
        _core.Workload("w", 1, [("l", 0.0, 0.0)], [("t", 1, 0)], 4, "allsum")
    assert e.value.field == "workload.collective"
    with pytest.raises(InputError) as e:
        _core.Workload("w", 1, [("l", 0.0, 0.0)], [("t", 1, 1)], 4, "allreduce")
    assert e.value.args == ("workload.tensors[0].layer", "1 is not a layer index (0..1)")
