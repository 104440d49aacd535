"""A value of the wrong kind (text, ``None``, a list where a number is needed) is an
``InputTypeError`` (an ``InputError`` that is also a ``TypeError``), as docs/guide.md
promises; a number of the right kind out of range is a plain ``InputError``. ``Cluster("4",
...)``, ``iterations="3"``, ``Tensor("a", "4MiB")`` or ``load_model(..., mfu="0.3")`` were
plain ``InputError``s (``check_int`` and ``check_real`` refused every non-number as out of
range). A ``Job`` checks its name (the CLI's rule: ASCII letters, digits, ``_-.``) and its
strategy when made (they were refused by ``simulate_jobs`` only, naming ``strategy``); and a
workload that computes, but less than 1 ns per layer, is refused (it ran as a collective
microbenchmark, with NaN samples/s and no word)."""

from __future__ import annotations

import json
import math
from fractions import Fraction
from typing import Any, Callable

import pytest
import tensorwire as tw
from hypothesis import given
from hypothesis import strategies as st
from tensorwire._core import InputError
from tensorwire.api import Job, job_name_problem, simulate_jobs  # type: ignore[attr-defined]
from tensorwire.cli import main
from tensorwire.failures import Failure
from tensorwire.limits import U32_MAX, InputTypeError, check_int, check_positive, check_real, check_text
from tensorwire.workload import COMPUTE_BELOW_RESOLUTION, Layer, Tensor, Workload  # type: ignore[attr-defined]

W = tw.load_model("resnet50")
C = tw.Cluster(8, "25Gbps")
LAYERS = (Layer("l", 0.1, 0.2, (Tensor("w", 4096),)),)

WRONG_KINDS: list[tuple[str, Callable[[], Any]]] = [
    ("workers", lambda: tw.Cluster("4", "25Gbps")),  # type: ignore[arg-type]
    ("workers", lambda: tw.Cluster(None, "25Gbps")),  # type: ignore[arg-type]
    ("workers", lambda: tw.Cluster([4], "25Gbps")),  # type: ignore[arg-type]
    ("workers", lambda: tw.Cluster(True, "25Gbps")),
    ("latency", lambda: tw.Cluster(4, "25Gbps", latency=None)),  # type: ignore[arg-type]
    ("per_message_overhead", lambda: tw.Cluster(4, "25Gbps", per_message_overhead=[0])),  # type: ignore[arg-type]
    ("iterations", lambda: tw.simulate(W, C, "ring", iterations="3")),  # type: ignore[arg-type]
    ("iterations", lambda: tw.simulate(W, C, "ring", iterations=None)),  # type: ignore[arg-type]
    ("max_flows", lambda: tw.simulate(W, C, "ring", max_flows="1")),  # type: ignore[arg-type]
    ("seed", lambda: tw.simulate(W, C, "ring", seed="0")),  # type: ignore[arg-type]
    ("iterations", lambda: simulate_jobs([Job("a", W, 4, "ring")], C, iterations="3")),  # type: ignore[arg-type]
    ("max_flows", lambda: simulate_jobs([Job("a", W, 4, "ring")], C, max_flows="1")),  # type: ignore[arg-type]
    ("tensor.bytes", lambda: Tensor("a", "4MiB")),  # type: ignore[arg-type]
    ("tensor.bytes", lambda: Tensor("a", None)),  # type: ignore[arg-type]
    ("tensor.name", lambda: Tensor(None, 4)),  # type: ignore[arg-type]
    ("layer.forward_s", lambda: Layer("l", "0.1", 0.1)),  # type: ignore[arg-type]
    ("layer.backward_s", lambda: Layer("l", 0.1, None)),  # type: ignore[arg-type]
    ("layer.name", lambda: Layer(3, 0.1, 0.1)),  # type: ignore[arg-type]
    ("workload.batch_size", lambda: Workload("x", "1", LAYERS)),  # type: ignore[arg-type]
    ("workload.batch_size", lambda: Workload("x", None, LAYERS)),  # type: ignore[arg-type]
    ("workload.dtype_bytes", lambda: Workload("x", 1, LAYERS, dtype_bytes="4")),  # type: ignore[arg-type]
    ("workload.collective", lambda: Workload("x", 1, LAYERS, collective_kind=None)),  # type: ignore[arg-type]
    ("workload.name", lambda: Workload(None, 1, LAYERS)),  # type: ignore[arg-type]
    ("workload.sources", lambda: Workload("x", 1, LAYERS, sources="paper")),  # type: ignore[arg-type]
    ("workload.sources", lambda: Workload("x", 1, LAYERS, sources=5)),  # type: ignore[arg-type]
    ("workload.layers", lambda: Workload("x", 1, None)),  # type: ignore[arg-type]
    ("mfu", lambda: tw.load_model("llama3_8b", mfu="0.3")),  # type: ignore[arg-type]
    ("seq_len", lambda: tw.load_model("llama3_8b", seq_len="4096")),  # type: ignore[arg-type]
    ("micro_batch", lambda: tw.load_model("llama3_8b", micro_batch="1")),  # type: ignore[arg-type]
    ("batch_size", lambda: tw.load_model("llama3_8b", batch_size="1")),  # type: ignore[arg-type]
    ("batch_size", lambda: tw.load_model("resnet50", batch_size="64")),  # type: ignore[arg-type]
    ("recompute", lambda: tw.load_model("llama3_8b", recompute="yes")),  # type: ignore[arg-type]
    ("mfu", lambda: tw.load_model("resnet50", mfu="0.3")),  # type: ignore[arg-type]
    ("model", lambda: tw.load_model(None)),  # type: ignore[arg-type]
    ("gpu", lambda: tw.load_model("resnet50", gpu=1)),  # type: ignore[arg-type]
    ("compute_speedup", lambda: W.with_compute_speedup("2")),  # type: ignore[arg-type]
    ("jobs.strategy", lambda: Job("a", W, 4, None)),  # type: ignore[arg-type]
    ("jobs.strategy", lambda: Job("a", W, 4, 5)),  # type: ignore[arg-type]
    ("jobs.name", lambda: Job(None, W, 4, "ring")),  # type: ignore[arg-type]
    ("jobs.workers", lambda: Job("a", W, "4", "ring")),  # type: ignore[arg-type]
    ("failures.at_s", lambda: Failure("h3", "1s")),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("field, call", WRONG_KINDS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(WRONG_KINDS)])
def test_a_value_of_the_wrong_kind_is_a_type_error_naming_its_field(field: str, call: Callable[[], Any]) -> None:
    with pytest.raises(InputError) as e:
        call()
    assert isinstance(e.value, TypeError) and isinstance(e.value, InputTypeError), e.value.args
    assert e.value.field == field and e.value.message.startswith("must be "), e.value.args


OUT_OF_RANGE: list[tuple[str, Callable[[], Any]]] = [
    ("workers", lambda: tw.Cluster(0, "25Gbps")),
    ("workers", lambda: tw.Cluster(1.5, "25Gbps")),  # type: ignore[arg-type]
    ("workers", lambda: tw.Cluster(4.0, "25Gbps")),  # type: ignore[arg-type]
    ("latency", lambda: tw.Cluster(4, "25Gbps", latency=-1)),
    ("iterations", lambda: tw.simulate(W, C, "ring", iterations=0)),
    ("max_flows", lambda: tw.simulate(W, C, "ring", max_flows=0)),
    ("tensor.bytes", lambda: Tensor("a", -1)),
    ("tensor.bytes", lambda: Tensor("a", 1.5)),  # type: ignore[arg-type]
    ("layer.forward_s", lambda: Layer("l", -0.1, 0.1)),
    ("layer.forward_s", lambda: Layer("l", math.nan, 0.1)),
    ("workload.batch_size", lambda: Workload("x", 0, LAYERS)),
    ("workload.dtype_bytes", lambda: Workload("x", 1, LAYERS, dtype_bytes=3)),
    ("workload.collective", lambda: Workload("x", 1, LAYERS, collective_kind="gather")),
    ("mfu", lambda: tw.load_model("llama3_8b", mfu=2)),
    ("seq_len", lambda: tw.load_model("llama3_8b", seq_len=0)),
    ("micro_batch", lambda: tw.load_model("llama3_8b", micro_batch=0)),
    ("batch_size", lambda: tw.load_model("resnet50", batch_size=0)),
    ("compute_speedup", lambda: W.with_compute_speedup(-2)),
    ("jobs.workers", lambda: Job("a", W, 0, "ring")),
    ("jobs.strategy", lambda: Job("a", W, 4, "bogus")),
    ("jobs.strategy.foo", lambda: Job("a", W, 4, "ring:foo=1")),
]


@pytest.mark.parametrize("field, call", OUT_OF_RANGE, ids=[f"{f}-{i}" for i, (f, _) in enumerate(OUT_OF_RANGE)])
def test_a_value_of_the_right_kind_out_of_range_is_a_plain_input_error(field: str, call: Callable[[], Any]) -> None:
    with pytest.raises(InputError) as e:
        call()
    assert not isinstance(e.value, TypeError), e.value.args
    assert e.value.field == field, e.value.args


#: Values of every kind: the numbers a check takes (numpy's aside) and what is no number.
NON_NUMBERS = st.text(max_size=4) | st.none() | st.booleans() | st.lists(st.integers(), max_size=2) | st.just(1j)
NUMBERS = (
    st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.fractions()
    | st.integers(min_value=-(10**400), max_value=10**400)
)


@given(NUMBERS | NON_NUMBERS, st.integers(0, 10), st.integers(0, 10))
def test_check_int_refuses_a_non_number_as_a_type_error_and_a_number_out_of_range_as_an_input_error(
    value: Any, low: int, span: int
) -> None:
    high = low + span
    number = isinstance(value, (int, float, Fraction)) and not isinstance(value, bool)
    if isinstance(value, int) and number and low <= value <= high:
        assert check_int("n", value, low, high) == value
        return
    with pytest.raises(InputError) as e:
        check_int("n", value, low, high)
    assert e.value.field == "n"
    assert isinstance(e.value, InputTypeError) == (not number), (value, e.value.args)
    assert f"from {low} to {high}" in e.value.message


@given(NUMBERS | NON_NUMBERS)
def test_check_real_refuses_exactly_non_numbers_as_type_errors(value: Any) -> None:
    number = isinstance(value, (int, float, Fraction)) and not isinstance(value, bool)
    try:
        expected = float(value) if number else None
    except OverflowError:  # an integer past a float: a number out of range
        expected = None
    if expected is not None:
        x = check_real("x", value)
        assert x == expected or (math.isnan(x) and math.isnan(expected))
        return
    with pytest.raises(InputError) as e:
        check_real("x", value)
    assert e.value.field == "x" and isinstance(e.value, InputTypeError) == (not number), (value, e.value.args)


@given(NUMBERS | NON_NUMBERS)
def test_check_positive_and_check_text_say_which_kind(value: Any) -> None:
    number = isinstance(value, (int, float, Fraction)) and not isinstance(value, bool)
    try:
        check_positive("p", value, "a factor", 10)
    except InputError as e:
        assert isinstance(e, InputTypeError) == (not number) and e.field == "p"
    else:
        assert number and 0 < value <= 10
    if not isinstance(value, str):
        with pytest.raises(InputTypeError, match="^t: must be text"):
            check_text("t", value)


def test_numpy_numbers_are_numbers() -> None:
    np = pytest.importorskip("numpy")
    assert check_int("n", np.int64(3), 1, 4) == 3 and check_real("x", np.float32(0.5)) == 0.5
    for value in (np.int64(0), np.float64(2.5)):
        with pytest.raises(InputError) as e:
            check_int("n", value, 1, 2)
        assert not isinstance(e.value, TypeError)


# -- Job ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, field, says",
    [
        (("a", W, 4, None), "jobs.strategy", "must be a spec such as 'ring'"),
        (("a", W, 4, 5), "jobs.strategy", "must be a spec such as 'ring'"),
        (("a", W, 4, "bogus"), "jobs.strategy", 'unknown strategy "bogus"'),
        (("a", W, 4, "ring:foo=1"), "jobs.strategy.foo", 'ring has no option "foo"'),
        (("a", W, 4, "ps+ina:credit=0B"), "jobs.strategy.credit", ""),
        (("a b", W, 4, "ring"), "jobs.name", "the name 'a b' may use only ASCII letters, digits, '_', '-' and '.'"),
        (("a:b", W, 4, "ring"), "jobs.name", "the name 'a:b' may use only ASCII letters"),
        (("é", W, 4, "ring"), "jobs.name", "the name 'é' may use only ASCII letters"),
        (("", W, 4, "ring"), "jobs.name", "the name '' may use only ASCII letters"),
        (("a\x1b", W, 4, "ring"), "jobs.name", "may use only ASCII letters"),
        (("a", None, 4, "ring"), "jobs.workload", "must be a Workload"),
        (("a", W, 0, "ring"), "jobs.workers", "need an integer from 1 to"),
        (("a", W, U32_MAX + 1, "ring"), "jobs.workers", "need an integer from 1 to"),
    ],
)
def test_a_job_is_checked_when_made(args: tuple[Any, ...], field: str, says: str) -> None:
    with pytest.raises(InputError) as e:
        Job(*args)
    assert e.value.field == field and says in e.value.message, e.value.args


def test_a_job_takes_the_names_and_strategies_simulate_takes() -> None:
    for name in ("a", "A-1", "job_2.b", "0"):
        assert Job(name, W, 4, "ring").name == name
    assert Job("a", W, 4, tw.Strategy("ps:num_ps=2")).hosts_needed == 6


def test_simulate_jobs_names_the_job_of_a_refused_field() -> None:
    # A job whose strategy changed after it was made (frozen, but not sealed): refused as
    # the i-th job's, as the core names its own refusals of a job.
    bad = Job("b", W, 4, "ring")
    object.__setattr__(bad, "strategy", "bogus")
    with pytest.raises(InputError) as e:
        simulate_jobs([Job("a", W, 4, "ring"), bad], C)
    assert e.value.field == "jobs[1].strategy" and not isinstance(e.value, TypeError)
    object.__setattr__(bad, "strategy", None)
    with pytest.raises(InputTypeError) as t:
        simulate_jobs([Job("a", W, 4, "ring"), bad], C)
    assert t.value.field == "jobs[1].strategy"


@pytest.mark.parametrize("name", ["a b", "a:b", "é", "a\x1b", "ünï"])
def test_python_and_the_cli_refuse_the_same_names_in_the_same_words(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    problem = job_name_problem(name)
    assert problem is not None and "ASCII letters" in problem
    with pytest.raises(InputError) as e:
        Job(name, W, 4, "ring")
    assert e.value.message == problem
    spec = f"{name}:resnet50:4:ring"
    if ":" not in name:  # a colon splits the spec itself
        assert main(["jobs", "-b", "25Gbps", "--job", spec]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"tensorwire: error: job: {spec!r}: {problem}", err


@pytest.mark.parametrize(
    "spec, line",
    [
        ("b:resnet50:4:bogus", 'jobs[1].strategy: unknown strategy "bogus"'),
        ("b:resnet50:4:ring:foo=1", 'jobs[1].strategy.foo: ring has no option "foo"'),
    ],
)
def test_the_cli_names_a_refused_job_by_its_place(spec: str, line: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jobs", "-b", "25Gbps", "--job", "a:resnet50:4:ring", "--job", spec]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"tensorwire: error: {line}"), err


# -- compute below the engine's resolution ----------------------------------------------------


def test_a_speedup_that_leaves_less_than_a_nanosecond_of_compute_is_refused() -> None:
    for speedup in (1e12, 1e300):
        with pytest.raises(InputError) as e:
            W.with_compute_speedup(speedup)
        assert e.value.field == "compute_speedup" and COMPUTE_BELOW_RESOLUTION in e.value.message
        assert "below 1 ns per layer" in e.value.message
    # The largest speedup it suggests still computes.
    longest = max(max(layer.forward_s, layer.backward_s) for layer in W.layers)
    assert W.with_compute_speedup(longest / 0.5e-9 / 1.01).has_compute
    # A microbenchmark had no compute to lose: sped up, it is the same.
    bench = Workload.collective("allreduce:1MiB")
    assert bench.with_compute_speedup(1e300).total_bytes == bench.total_bytes


@pytest.mark.parametrize(
    "forward, backward, field",
    [
        (1e-30, 0.0, "workload.layers[0].forward_s"),
        (0.0, 4e-10, "workload.layers[0].backward_s"),
        # 0.3 ns each: 0.6 ns together, but the engine rounds each to 0 ns.
        (3e-10, 3e-10, "workload.layers[0].forward_s"),
    ],
)
def test_a_workload_whose_compute_rounds_to_zero_nanoseconds_is_refused(
    forward: float, backward: float, field: str
) -> None:
    layers = (Layer("a", forward, backward, (Tensor("w", 4096),)), Layer("b", 0.0, 0.0))
    with pytest.raises(InputError) as e:
        Workload("x", 1, layers)
    assert e.value.field == field and "below 1 ns per layer" in e.value.message, e.value.args
    data = Workload("x", 1, (Layer("a", 1.0, 1.0, (Tensor("w", 4096),)),)).to_dict()
    data["layers"][0].update(forward_s=forward, backward_s=backward)
    with pytest.raises(InputError) as e:
        Workload.from_dict(data)
    assert e.value.field == field


def test_compute_of_a_nanosecond_or_of_none_runs_as_before() -> None:
    # One layer of 1 ns among layers below it: the workload computes (1 ns).
    w = Workload("x", 1, (Layer("a", 1e-9, 0.0, (Tensor("w", 4096),)), Layer("b", 1e-12, 1e-12)))
    assert w.has_compute
    r = tw.simulate(w, tw.Cluster(2, "25Gbps"), "ring")
    assert r.compute_time_s == 1e-9 and r.throughput_samples_per_s > 0
    # No compute at all: a collective microbenchmark, whose samples/s are NaN by design.
    bench = Workload("x", 1, (Layer("a", 0.0, 0.0, (Tensor("w", 4096),)),))
    assert not bench.has_compute
    assert math.isnan(tw.simulate(bench, tw.Cluster(2, "25Gbps"), "ring").throughput_samples_per_s)


def test_the_cli_refuses_compute_below_a_nanosecond_in_one_line(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    run = ["simulate", "-n", "8", "-b", "25Gbps", "-s", "ring"]
    assert main([*run, "-m", "resnet50", "--compute-speedup", "1e300"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("tensorwire: error: compute_speedup: 1e+300 makes"), err
    path = tmp_path / "w.json"
    w = Workload("x", 1, (Layer("a", 1.0, 1.0, (Tensor("w", 4096),)),)).to_dict()
    w["layers"][0]["forward_s"], w["layers"][0]["backward_s"] = 1e-30, 0
    path.write_text(json.dumps(w))
    assert main([*run, "--workload", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("tensorwire: error: workload.layers[0].forward_s: 1e-30 s: the compute is below 1 ns"), err
