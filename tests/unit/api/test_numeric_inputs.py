"""Numbers at the API: numpy's integers and floats are taken wherever a number is (never a
``bool``) and kept as plain ``int``/``float``, so that ``to_dict()`` stays JSON-ready;
values out of range are refused naming the parameter; containers given as lists are kept as
tuples (hashable), and what a frozen object holds cannot be changed through it."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from typing import Any, Callable

import pytest
import tensorwire as tw
from hypothesis import given, settings
from hypothesis import strategies as st
from tensorwire import Cluster, InputError, Job, Layer, Tensor, Workload, simulate, simulate_jobs
from tensorwire.api import check_simulate
from tensorwire.calibrate.predict import nccl_predict
from tensorwire.failures import parse_failure
from tensorwire.sweep.grid import expand
from tensorwire.workloads import llm

np = pytest.importorskip("numpy")

#: numpy's integer types; every one holds the small counts used here.
NUMPY_INTS = (np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64)
NUMPY_FLOATS = (np.float16, np.float32, np.float64)

#: A small workload that simulates in milliseconds: 1 MiB of gradients, 1 ms of compute.
SMALL = Workload("small", 4, (Layer("l0", 0.0004, 0.0006, (Tensor("w", 1 << 20),)),))
RESNET = tw.load_model("resnet50")


def _field(call: Callable[[], Any]) -> str:
    """The field of the InputError ``call`` raises."""
    with pytest.raises(InputError) as e:
        call()
    return str(e.value.args[0])


# -- 1. numpy integers are stored as plain ints --------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(NUMPY_INTS), workers=st.integers(1, 16))
def test_any_numpy_integer_of_workers_gives_the_same_json_ready_result_as_the_int(kind: Any, workers: int) -> None:
    plain = simulate(SMALL, Cluster(workers, "25Gbps"), "ring")
    numpy = simulate(SMALL, Cluster(kind(workers), "25Gbps"), "ring")
    assert numpy == plain and type(numpy.workers) is int
    assert json.loads(json.dumps(numpy.to_dict())) == json.loads(json.dumps(plain.to_dict()))


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(NUMPY_INTS), workers=st.integers(1, 8))
def test_a_jobs_numpy_worker_count_is_a_plain_int_in_its_result(kind: Any, workers: int) -> None:
    job = Job("a", SMALL, kind(workers), "ring")
    assert type(job.workers) is int and job == Job("a", SMALL, workers, "ring")
    (r,) = simulate_jobs([job], Cluster(8, "25Gbps"))
    assert type(r.workers) is int
    json.dumps(r.to_dict())


@settings(max_examples=40, deadline=None)
@given(
    int_kind=st.sampled_from(NUMPY_INTS),
    float_kind=st.sampled_from(NUMPY_FLOATS),
    nbytes=st.integers(0, 127),
    batch=st.integers(1, 127),
    forward=st.integers(0, 100),
)
def test_a_workload_of_numpy_numbers_is_the_plain_one_and_json_ready(
    int_kind: Any, float_kind: Any, nbytes: int, batch: int, forward: int
) -> None:
    seconds = float(float_kind(forward / 1000))
    given_ = Workload(
        "w",
        int_kind(batch),
        (Layer("l", float_kind(forward / 1000), int_kind(1), (Tensor("t", int_kind(nbytes)),)),),
        dtype_bytes=int_kind(2),
    )
    plain = Workload("w", batch, (Layer("l", seconds, 1.0, (Tensor("t", nbytes),)),), dtype_bytes=2)
    assert given_ == plain
    assert type(given_.batch_size) is int and type(given_.dtype_bytes) is int
    assert type(given_.tensors[0].bytes) is int
    assert type(given_.layers[0].forward_s) is float and type(given_.layers[0].backward_s) is float
    assert json.loads(json.dumps(given_.to_dict())) == plain.to_dict()


# -- 2. numpy numbers are taken wherever numbers are ------------------------------------------


def test_a_numpy_spread_is_the_float_spread() -> None:
    c = Cluster(8, "25Gbps")
    for kind in NUMPY_FLOATS:
        spread = kind(0.25)
        got = simulate(RESNET, c, "ring", stragglers="normal", spread=spread, seed=3)
        assert got == simulate(RESNET, c, "ring", stragglers="normal", spread=float(spread), seed=3)
    # Not a number is still a TypeError naming spread.
    with pytest.raises(TypeError, match="spread: must be a number"):
        simulate(RESNET, c, "ring", stragglers="normal", spread=True)


@pytest.mark.parametrize("kind", [*NUMPY_INTS, *NUMPY_FLOATS])
def test_a_layer_takes_numpy_times_as_floats(kind: Any) -> None:
    layer = Layer("l", kind(1), kind(2))
    assert layer == Layer("l", 1.0, 2.0) and type(layer.forward_s) is float and type(layer.backward_s) is float


@pytest.mark.parametrize("kind", NUMPY_INTS)
def test_load_model_takes_numpy_batch_sizes(kind: Any) -> None:
    assert tw.load_model("resnet50", batch_size=kind(64)) == tw.load_model("resnet50", batch_size=64)
    assert type(tw.load_model("resnet50", batch_size=kind(64)).batch_size) is int


def test_the_llm_options_take_numpy_numbers() -> None:
    plain = tw.load_model("llama3_8b", seq_len=128, micro_batch=2, mfu=0.5)
    numpy = tw.load_model("llama3_8b", seq_len=np.int32(128), micro_batch=np.int64(2), mfu=np.float32(0.5))
    assert numpy.batch_size == 2 and type(numpy.batch_size) is int
    assert [t.bytes for t in numpy.tensors] == [t.bytes for t in plain.tensors]
    assert numpy.compute_time_s == pytest.approx(plain.compute_time_s, rel=1e-6)
    assert llm.workload("llama3_8b", seq_len=128, dtype_bytes=np.int8(4)).dtype_bytes == 4
    assert llm.tokens_per_sample("llama3_8b", np.uint16(128)) == 128
    assert type(llm.check_mfu(np.float32(0.5))) is float


def test_grid_axes_take_numpy_numbers_as_plain_ones() -> None:
    listed = expand("vgg16", [np.int64(8)], "10Gbps", "ring")
    scalar = expand("vgg16", np.int64(8), "10Gbps", "ring")
    assert listed == scalar == expand("vgg16", [8], "10Gbps", "ring")
    configs = expand(
        "resnet50",
        np.int32(4),
        [np.float64(1e9), np.int64(2 * 10**9)],
        "ring",
        latencies=[np.int64(0), np.float32(1e-6)],
        batches=[np.int64(16)],
        seeds=[np.uint64(3)],
        compute_speedups=[np.float32(2)],
        iterations=np.int64(2),
    )
    assert len(configs) == 4
    for c in configs:
        assert type(c.workers) is int and type(c.batch) is int and type(c.seed) is int and type(c.iterations) is int
        assert type(c.bandwidth) is float and type(c.latency) is float and type(c.compute_speedup) is float
    assert {(c.batch, c.seed, c.compute_speedup) for c in configs} == {(16, 3, 2.0)}


BOOLS: list[tuple[str, Callable[[], Any]]] = [
    ("workers", lambda: Cluster(True, "25Gbps")),
    ("jobs.workers", lambda: Job("a", SMALL, True, "ring")),
    ("tensor.bytes", lambda: Tensor("t", True)),
    ("layer.forward_s", lambda: Layer("l", True, 0.0)),
    ("workload.batch_size", lambda: Workload("w", True, SMALL.layers)),
    ("workload.dtype_bytes", lambda: Workload("w", 1, SMALL.layers, dtype_bytes=True)),
    ("batch_size", lambda: tw.load_model("resnet50", batch_size=True)),
    ("seq_len", lambda: tw.load_model("llama3_8b", seq_len=True)),
    ("micro_batch", lambda: tw.load_model("llama3_8b", micro_batch=True)),
    ("mfu", lambda: tw.load_model("llama3_8b", mfu=True)),
    ("workers", lambda: expand("vgg16", [True], "10Gbps", "ring")),
    ("workers", lambda: expand("vgg16", True, "10Gbps", "ring")),
    ("compute_speedup", lambda: expand("vgg16", 4, "10Gbps", "ring", compute_speedups=[True])),
    ("slowdowns[0]", lambda: simulate(SMALL, Cluster(2, "25Gbps"), "ring", stragglers="fixed", slowdowns=[True] * 2)),
    ("gpus", lambda: nccl_predict("rail:node=dgx-h100", True, "allreduce", 1e6)),
    ("bytes", lambda: nccl_predict("rail:node=dgx-h100", 8, "allreduce", True)),
    ("channels", lambda: nccl_predict("rail:node=dgx-h100", 8, "allreduce", 1e6, channels=True)),
]


@pytest.mark.parametrize("field, call", BOOLS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(BOOLS)])
def test_a_bool_is_not_a_number_anywhere(field: str, call: Callable[[], Any]) -> None:
    assert _field(call) == field


# -- 3. the LLM helpers check the sequence length and the block index ---------------------------


@pytest.mark.parametrize("seq_len", [-5, 0, 2.5, 10**6, 8193, np.int64(0), "128", None])
def test_forward_flops_refuses_sequence_lengths_outside_the_context(seq_len: Any) -> None:
    a = llm.architecture("llama3_8b")
    for call in (
        lambda: llm.forward_flops("llama3_8b", seq_len),
        lambda: llm.block_forward_flops(a, seq_len),
        lambda: llm.layers(a, seq_len),
        lambda: llm.tokens_per_sample("llama3_8b", seq_len) if seq_len is not None else llm.check_seq_len(a, None),
    ):
        assert _field(call) == "seq_len"


def test_forward_flops_takes_one_to_the_context_length() -> None:
    a = llm.architecture("llama3_8b")
    assert 0 < llm.forward_flops("llama3_8b", 1) < llm.forward_flops("llama3_8b", a.context)
    assert llm.forward_flops("llama3_8b", np.int16(512)) == llm.forward_flops("llama3_8b", 512)


@pytest.mark.parametrize("index", [-1, 32, 10**9, 1.0, True, "0", np.int64(-1)])
def test_block_tensors_refuses_blocks_the_model_does_not_have(index: Any) -> None:
    a = llm.architecture("llama3_8b")
    with pytest.raises(InputError) as e:
        llm.block_tensors(a, index)
    assert e.value.args[0] == "block" and "from 0 to 31" in e.value.args[1]


def test_block_tensors_names_every_block_there_is() -> None:
    a = llm.architecture("llama3_8b")
    assert llm.block_tensors(a, 0)[0][0] == "model.layers.0.self_attn.q_proj.weight"
    assert llm.block_tensors(a, np.int8(31))[0][0] == "model.layers.31.self_attn.q_proj.weight"


# -- 4. a workload's element size, sources and containers --------------------------------------


@pytest.mark.parametrize("dtype_bytes", [2.0, 4.0, True, "2", 3, np.float32(2)])
def test_an_element_size_that_is_not_an_integer_is_refused_at_construction(dtype_bytes: Any) -> None:
    assert _field(lambda: Workload("w", 1, SMALL.layers, dtype_bytes=dtype_bytes)) == "workload.dtype_bytes"


@pytest.mark.parametrize("sources", ["abc", b"abc"])
def test_one_text_of_sources_is_refused(sources: Any) -> None:
    assert _field(lambda: Workload("w", 1, SMALL.layers, sources=sources)) == "workload.sources"


def test_lists_are_kept_as_tuples_so_workloads_and_layers_hash() -> None:
    layer = Layer("l", 0.001, 0.002, [Tensor("t", 4)])  # type: ignore[arg-type]
    assert layer.tensors == (Tensor("t", 4),) and hash(layer) == hash(Layer("l", 0.001, 0.002, (Tensor("t", 4),)))
    w = Workload("w", 1, [layer], sources=["paper"])  # type: ignore[arg-type]
    assert w.layers == (layer,) and w.sources == ("paper",)
    assert w == Workload("w", 1, (layer,), sources=("paper",)) and len({w, copy.deepcopy(w)}) == 1


# -- 5. simulate's keywords -------------------------------------------------------------------


def test_bool_slowdowns_are_refused_naming_the_item() -> None:
    c = Cluster(4, "25Gbps")
    with pytest.raises(InputError) as e:
        simulate(SMALL, c, "ring", stragglers="fixed", slowdowns=[1.0, 1.0, 1.0, False])
    assert e.value.args[0] == "slowdowns[3]"
    numpy = simulate(SMALL, c, "ring", stragglers="fixed", slowdowns=[np.float32(1), np.int64(2), 1, 1.5])
    assert numpy == simulate(SMALL, c, "ring", stragglers="fixed", slowdowns=[1.0, 2.0, 1.0, 1.5])


@pytest.mark.parametrize(
    "stragglers, slowdowns", [("none", None), ("fixed", [1.0] * 4), ("empirical", [1.0] * 4), ("one", [2.0])]
)
def test_a_spread_that_would_change_nothing_is_refused(stragglers: str, slowdowns: Any) -> None:
    c = Cluster(4, "25Gbps")
    for call in (simulate, check_simulate):
        with pytest.raises(InputError) as e:
            call(SMALL, c, "ring", stragglers=stragglers, spread=4.0, slowdowns=slowdowns)
        assert e.value.args[0] == "spread" and stragglers in e.value.args[1]
    # A spread of 0 (the default) is no spread.
    assert simulate(SMALL, c, "ring", stragglers=stragglers, spread=0, slowdowns=slowdowns).iteration_time_s > 0


def test_failures_none_is_no_failures() -> None:
    c = Cluster(4, "25Gbps")
    assert simulate(SMALL, c, "ring", failures=None) == simulate(SMALL, c, "ring")
    check_simulate(SMALL, c, "ring", failures=None)
    job = Job("a", SMALL, 4, "ring")
    assert simulate_jobs([job], c, failures=None) == simulate_jobs([job], c)
    # A generator of failures is taken once (its check used it up before).
    slow = simulate(SMALL, c, "ring", failures=[parse_failure("h0@0s:rate=0.5")])
    assert slow.failures_applied == 1
    once = (f for f in [parse_failure("h0@0s:rate=0.5")])
    assert simulate(SMALL, c, "ring", failures=once) == slow  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="failures: must be"):
        simulate(SMALL, c, "ring", failures=5)  # type: ignore[arg-type]


# -- 6. nccl_predict --------------------------------------------------------------------------


def test_nccl_predict_takes_rate_text_and_numpy_numbers() -> None:
    rate = nccl_predict("rail:node=dgx-h100", 16, "allreduce", 1 << 26, bandwidth="25Gbps")
    assert rate == nccl_predict("rail:node=dgx-h100", 16, "allreduce", 1 << 26, bandwidth=25e9 / 8)
    numpy = nccl_predict("rail:node=dgx-h100", np.int64(8), "allreduce", np.float32(1 << 20), channels=np.uint8(4))
    assert numpy == nccl_predict("rail:node=dgx-h100", 8, "allreduce", float(1 << 20), channels=4)
    assert _field(lambda: nccl_predict("rail:node=dgx-h100", 8, "allreduce", 1e6, bandwidth="fast")) == "bandwidth"


def test_nccl_predicts_example_error_is_the_runtimes_exactly() -> None:
    with pytest.raises(InputError) as e:
        nccl_predict("rail", 8, "allreduce", 1e6, proto="fast")
    assert f"tensorwire.InputError: {e.value}\n" in str(nccl_predict.__doc__)


# -- 7. a strategy pickles and copies ----------------------------------------------------------


@pytest.mark.parametrize("spec", ["ring", "ring:partition=4MiB", "ps:num_ps=2", "nccl:algo=ring+tree,channels=8"])
def test_a_strategy_pickles_and_deep_copies(spec: str) -> None:
    s = tw.Strategy(spec)
    for other in (pickle.loads(pickle.dumps(s)), copy.deepcopy(s), copy.copy(s)):
        assert other == s and other.core.options == s.core.options and other.servers == s.servers
    job = Job("a", SMALL, 4, s)
    assert copy.deepcopy(job) == job and pickle.loads(pickle.dumps(job)).hosts_needed == job.hosts_needed


# -- 8. load_model names its own argument -------------------------------------------------------


@pytest.mark.parametrize("batch", [0, -1, 2.5, "64", np.int64(0)])
def test_load_model_names_batch_size(batch: Any) -> None:
    with pytest.raises(InputError) as e:
        tw.load_model("resnet50", batch_size=batch)
    assert e.value.args[0] == "batch_size"


def test_a_batch_past_the_horizon_names_batch_size() -> None:
    with pytest.raises(InputError) as e:
        tw.load_model("resnet50", batch_size=4294967295)
    assert e.value.args[0] == "batch_size" and "horizon" in e.value.args[1]


# -- 9. a result's link utilisation is read-only --------------------------------------------------


def test_link_utilization_is_read_only_and_to_dict_a_plain_copy() -> None:
    r = simulate(SMALL, Cluster(4, "25Gbps"), "ring")
    link, busiest = next(iter(r.link_utilization)), r.max_link_utilization
    with pytest.raises(TypeError):
        r.link_utilization[link] = 99  # type: ignore[index]
    assert r.max_link_utilization == busiest
    d = r.to_dict()
    assert type(d["link_utilization"]) is dict and d["link_utilization"] == dict(r.link_utilization)
    d["link_utilization"][link] = 99
    d["timeline"].append({})
    assert r.max_link_utilization == busiest and r.to_dict()["link_utilization"][link] != 99
    for other in (pickle.loads(pickle.dumps(r)), copy.deepcopy(r)):
        assert other == r and type(other.link_utilization) is type(r.link_utilization)
    # A mapping given (replace, a Result built by hand) is copied, not wrapped.
    given = {"h0->sw": 0.5}
    replaced = dataclasses.replace(r, link_utilization=given)
    given["h0->sw"] = 9.0
    assert replaced.max_link_utilization == 0.5 and replaced.busiest_links(1) == [("h0->sw", 0.5)]
    assert dataclasses.replace(r, link_utilization={}).link_utilization == {}
