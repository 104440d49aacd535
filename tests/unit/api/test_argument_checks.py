"""API arguments: integers outside the core's types are InputError naming the field (never
OverflowError or a wrapped value); wrong object types are an InputError that is also a
TypeError (``tensorwire.limits.InputTypeError``), naming the argument and saying what was
expected (never an AttributeError from deep inside, or a binding's message)."""

from __future__ import annotations

import pickle
from typing import Any, Callable

import pytest
import tensorwire as tw
from tensorwire._core import MAX_WORKERS, InputError
from tensorwire.api import Job, simulate_jobs
from tensorwire.failures import Failure, parse_failure
from tensorwire.limits import U32_MAX, U64_MAX, InputTypeError, check_int
from tensorwire.strategy import split_specs
from tensorwire.workload import Layer, Tensor, Workload

W = tw.load_model("resnet50")
C = tw.Cluster(8, "25Gbps")

OUT_OF_RANGE: list[tuple[str, Callable[[], Any]]] = [
    ("workers", lambda: tw.Cluster(2**64, "25Gbps")),
    ("workers", lambda: tw.Cluster(U32_MAX + 1, "25Gbps")),
    ("iterations", lambda: tw.simulate(W, C, "ring", iterations=10**30)),
    ("max_flows", lambda: tw.simulate(W, C, "ring", max_flows=10**30)),
    ("seed", lambda: tw.simulate(W, C, "ring", seed=2**64)),
    ("seed", lambda: tw.simulate(W, tw.Cluster(8, "25Gbps", placement="random"), "ring", seed=2**64)),
    ("seed", lambda: simulate_jobs([Job("a", W, 4, "ring")], C, seed=-1)),
    ("tensor.bytes", lambda: Tensor("t", -4)),
    ("tensor.bytes", lambda: Tensor("t", 2**64)),
    ("tensor.bytes", lambda: Tensor("t", True)),
    ("workload.batch_size", lambda: Workload("x", 2**63, (Layer("a", 0.1, 0.1),))),
    ("workload.batch_size", lambda: tw.load_model("resnet50", batch_size=2**40)),
    ("batch_size", lambda: tw.load_model("llama3_8b", batch_size=2**40)),
    ("micro_batch", lambda: tw.load_model("llama3_8b", micro_batch=2**40)),
    ("workload.tensors", lambda: Workload("x", 1, (Layer("a", 0, 0, (Tensor("a", 2**63), Tensor("b", 2**63))),))),
    ("jobs.workers", lambda: Job("a", W, 2**40, "ring")),
    ("bandwidth", lambda: tw.Cluster(8, True)),
    ("slowdowns", lambda: tw.simulate(W, C, "ring", slowdowns=[2] * 8)),
    ("gpu", lambda: tw.load_model("resnet50", gpu="")),
    ("tensor.name", lambda: Tensor("\ud800", 4)),
    # Integers past a float raised OverflowError wherever they met one.
    ("layer.forward_s", lambda: Layer("a", 10**400, 0.0)),
    ("compute_speedup", lambda: W.with_compute_speedup(10**400)),
    ("spread", lambda: tw.simulate(W, C, "ring", stragglers="normal", spread=10**400)),
    ("slowdowns[0]", lambda: tw.simulate(W, C, "ring", stragglers="fixed", slowdowns=[10**400] * 8)),
    ("failures.at_s", lambda: Failure("h3", 10**400, 0.5)),
]


@pytest.mark.parametrize("field, call", OUT_OF_RANGE, ids=[f"{f}-{i}" for i, (f, _) in enumerate(OUT_OF_RANGE)])
def test_out_of_range_values_are_input_errors_naming_the_field(field: str, call: Callable[[], Any]) -> None:
    with pytest.raises(InputError) as e:
        call()
    assert e.value.args[0] == field


WRONG_TYPES: list[Callable[[], Any]] = [
    lambda: tw.simulate(W, C, "ring", failures="h3@0s"),  # type: ignore[arg-type]
    lambda: tw.simulate(W, C, "ring", failures=[("h3", 0.0, 0.0)]),  # type: ignore[list-item]
    lambda: tw.simulate(W, C, "ring", failures=[None]),  # type: ignore[list-item]
    lambda: tw.simulate(W, C, "ring", progress=123),  # type: ignore[arg-type]
    lambda: tw.simulate("resnet50", C, "ring"),  # type: ignore[arg-type]
    lambda: Layer("a", 0.1, 0.1, (None,)),  # type: ignore[arg-type]
    lambda: Job("a", None, 4, "ring"),  # type: ignore[arg-type]
    lambda: simulate_jobs(["a"], C),  # type: ignore[list-item]
    lambda: split_specs(None),  # type: ignore[arg-type]
    lambda: Failure(None, 0.0),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("call", WRONG_TYPES)
def test_wrong_types_are_type_errors_saying_what_is_expected(call: Callable[[], Any]) -> None:
    with pytest.raises(TypeError, match=": must be ") as e:
        call()
    assert isinstance(e.value, InputError)


def test_a_numpy_seed_at_the_top_of_its_range_runs() -> None:
    # `seed % 2**64` on numpy's uint64 raised OverflowError ("too large to convert to C long").
    np = pytest.importorskip("numpy")
    assert tw.simulate(W, C, "ring", seed=np.uint64(2**64 - 1)).iteration_time_s > 0


def test_limits_are_the_cores_types() -> None:
    assert (U32_MAX, U64_MAX) == (4294967295, 18446744073709551615)
    assert check_int("x", U64_MAX) == U64_MAX
    with pytest.raises(InputError, match="100 bits"):
        check_int("x", 10**30, 0, U32_MAX)
    # The largest values pass the checks (the core may still refuse them for its budgets).
    assert tw.Cluster(MAX_WORKERS, "25Gbps").workers == MAX_WORKERS == 2**20  # the core's largest count
    assert Tensor("t", U64_MAX).bytes == U64_MAX


def test_empty_and_malformed_lists_are_refused() -> None:
    with pytest.raises(InputError, match="at least one"):
        split_specs("")
    with pytest.raises(InputError, match="empty item"):
        split_specs("ps,,ring")
    from tensorwire.sweep.grid import expand

    with pytest.raises(InputError, match="empty item"):
        expand("resnet50", "4,,8", "25Gbps", "ring")


def test_a_strategy_that_is_not_a_spec_is_a_type_error_naming_strategy() -> None:
    # A Job refuses it when made, naming its own field (it was refused by hosts_needed, as "strategy").
    for call, field in ((lambda: tw.simulate(W, C, None), "strategy"), (lambda: Job("a", W, 4, 3), "jobs.strategy")):  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=rf"^{field}: must be a spec such as 'ring'.*or a Strategy, not (None|3)$"):
            call()


def test_busiest_links_takes_a_count_of_zero_or_more() -> None:
    r = tw.simulate(W, C, "ring")
    assert r.busiest_links(0) == [] and len(r.busiest_links(3)) == 3
    assert len(r.busiest_links(10**6)) == len(r.link_utilization)
    for k in (-1, "a", 1.5, True, None):
        with pytest.raises(InputError, match="is not a count of links; give an integer >= 0") as e:
            r.busiest_links(k)  # type: ignore[arg-type]
        assert e.value.args[0] == "k"


def test_no_bandwidth_on_star_names_the_argument_as_well_as_the_flag() -> None:
    with pytest.raises(InputError) as e:
        tw.Cluster(workers=8, bandwidth=None)
    field, message = e.value.args
    assert field == "bandwidth" and "bandwidth= from Python" in message, message
    assert tw.Cluster(8, None, topology="rail:node=dgx-h100").bandwidth > 0  # a rail has its NICs' own


def test_an_input_error_reads_as_field_colon_message() -> None:
    """``str()`` of an InputError is the line the CLI prints after ``tensorwire: error:``
    (ValueError's own would be the tuple ``('model', "unknown ...")``); ``args``, ``field``
    and ``message`` keep the parts."""
    with pytest.raises(InputError) as e:
        tw.load_model("nope")
    assert str(e.value).startswith("model: unknown model 'nope'")
    assert e.value.args == (e.value.field, e.value.message) and e.value.field == "model"
    assert str(InputError("only a message")) == "only a message"


def test_type_errors_name_the_argument_not_the_binding() -> None:
    """Were "argument 'spec': 'NoneType' object cannot be converted to 'PyString'", "... to
    'PyBool'", and named the core's allow_folding for fold."""
    w, c = tw.load_model("resnet50"), tw.Cluster(2, "10Gbps")
    cases = [
        (lambda: tw.Workload.collective(None), "collective: must be text such as 'allreduce:64MiB'"),  # type: ignore[arg-type]
        (lambda: tw.simulate(w, c, "ring", timeline="yes"), "timeline: must be True or False"),  # type: ignore[arg-type]
        (lambda: tw.simulate(w, c, "ring", fold="no"), "fold: must be True or False"),  # type: ignore[arg-type]
        # (was float()'s "could not convert string to float")
        (lambda: tw.simulate(w, c, "ring", stragglers="normal", spread="abc"), "spread: must be a number"),  # type: ignore[arg-type]
    ]
    for call, message in cases:
        with pytest.raises(TypeError, match=message):
            call()


@pytest.mark.parametrize(
    "call, field, message",
    [
        # A NaN multiplier among the right number was "needs one per worker (2), got 2".
        (lambda: tw.simulate(tw.load_model("resnet50"), tw.Cluster(2, "10Gbps"), "ring", stragglers="fixed",
                             slowdowns=[1.0, float("nan")]), "slowdowns", "worker 1's multiplier is NaN"),
        # The workers' range is the core's (was "from 1 to 4294967295", then refused past 2^20).
        (lambda: tw.Cluster(2**20 + 1, "10Gbps"), "workers", "need an integer from 1 to 1048576"),
        (lambda: tw.Strategy("nccl:compute_slowdown=11"), "strategy.compute_slowdown", "not a number in [0, 10]"),
        # Clamped to 1 byte where bucket=0B was refused.
        (lambda: tw.Strategy("ddp:first_bucket=0B"), "strategy.first_bucket", "DDP's 1 MiB"),
        # The units the message lists are the ones taken (TiB was taken, not listed; PiB neither).
        (lambda: tw.Workload.collective("allreduce:1"), "collective", "TB, PB, KiB, MiB, GiB, TiB or PiB"),
    ],
)  # fmt: skip
def test_ranges_in_messages_are_what_is_taken(call: Any, field: str, message: str) -> None:
    with pytest.raises(tw.InputError) as e:
        call()
    assert e.value.args[0] == field and message in e.value.args[-1], e.value.args
    assert tw.Workload.collective("allreduce:1PiB").total_bytes == 2**50


# Each was a TypeError or AttributeError (some naming no argument: a binding's "'NoneType'
# object cannot be converted to 'PyString'", "'NoneType' object is not iterable"), where the
# guide says every error in input is an InputError.
WRONG_KINDS: list[tuple[str, Callable[[], Any]]] = [
    ("workload", lambda: tw.simulate(None, C, "ring")),  # type: ignore[arg-type]
    ("cluster", lambda: tw.simulate(W, None, "ring")),  # type: ignore[arg-type]
    ("strategy", lambda: tw.simulate(W, C, None)),  # type: ignore[arg-type]
    ("spread", lambda: tw.simulate(W, C, "ring", stragglers="lognormal", spread=None)),  # type: ignore[arg-type]
    ("spread", lambda: tw.simulate(W, C, "ring", stragglers="lognormal", spread="0.2")),  # type: ignore[arg-type]
    ("fold", lambda: tw.simulate(W, C, "ring", fold=1)),  # type: ignore[arg-type]
    ("timeline", lambda: tw.simulate(W, C, "ring", timeline=1)),  # type: ignore[arg-type]
    ("failures", lambda: tw.simulate(W, C, "ring", failures="h3@0s")),  # type: ignore[arg-type]
    ("failures", lambda: tw.simulate(W, C, "ring", failures=Failure("h3", 0.0))),  # type: ignore[arg-type]
    ("failures[1]", lambda: tw.simulate(W, C, "ring", failures=[Failure("h3", 0.0), "h3@0s"])),  # type: ignore[list-item]
    ("failures.target", lambda: Failure(None, 0)),  # type: ignore[arg-type]
    ("collective", lambda: tw.Workload.collective(None)),  # type: ignore[arg-type]
    ("jobs.workload", lambda: Job("a", "resnet50", 4, "ring")),  # type: ignore[arg-type]
    ("jobs.hosts", lambda: Job("a", W, 4, "ring", hosts=5)),  # type: ignore[arg-type]
    ("stragglers", lambda: tw.simulate(W, C, "ring", stragglers=None)),  # type: ignore[arg-type]
    ("slowdowns[0]", lambda: tw.simulate(W, C, "ring", stragglers="fixed", slowdowns=["1"] * 8)),  # type: ignore[list-item]
    ("slowdowns", lambda: tw.simulate(W, C, "ring", stragglers="fixed", slowdowns=1.0)),  # type: ignore[arg-type]
    ("fail", lambda: parse_failure(None)),  # type: ignore[arg-type]
    ("path", lambda: tw.Workload.from_file(None)),  # type: ignore[arg-type]
    ("jobs", lambda: simulate_jobs(None, C)),  # type: ignore[arg-type]
    ("jobs", lambda: simulate_jobs(Job("a", W, 4, "ring"), C)),  # type: ignore[arg-type]
    ("cluster", lambda: simulate_jobs([Job("a", W, 4, "ring")], None)),  # type: ignore[arg-type]
    ("strategies", lambda: split_specs(None)),  # type: ignore[arg-type]
    ("layer.tensors[0]", lambda: Layer("a", 0.1, 0.1, (None,))),  # type: ignore[arg-type]
]


@pytest.mark.parametrize("field, call", WRONG_KINDS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(WRONG_KINDS)])
def test_a_wrong_kind_is_an_input_error_naming_the_argument(field: str, call: Callable[[], Any]) -> None:
    with pytest.raises(InputError) as e:
        call()
    assert e.value.field == field and e.value.message.startswith("must be "), e.value.args
    # Also a TypeError, as the project's checks of an object's type were (code catching it still does).
    assert isinstance(e.value, TypeError) and isinstance(e.value, InputTypeError)
    assert str(e.value) == f"{field}: {e.value.message}"


def test_an_input_type_error_pickles() -> None:
    with pytest.raises(InputTypeError) as e:
        tw.simulate(W, C, "ring", fold=1)  # type: ignore[arg-type]
    again = pickle.loads(pickle.dumps(e.value))
    assert type(again) is InputTypeError and again.args == e.value.args


def test_generators_are_taken_once() -> None:
    # Each check used the generator up: "give at least one job", "gives 0 hosts for 4 workers".
    (r,) = simulate_jobs((j for j in [Job("a", W, 4, "ring")]), C)  # type: ignore[arg-type]
    assert r == simulate_jobs([Job("a", W, 4, "ring")], C)[0]
    job = Job("a", W, 4, "ring", hosts=(h for h in range(4)))  # type: ignore[arg-type]
    assert job.hosts == (0, 1, 2, 3) and job == Job("a", W, 4, "ring", hosts=[0, 1, 2, 3])
    assert simulate_jobs([job], C)[0] == simulate_jobs([Job("a", W, 4, "ring", hosts=[0, 1, 2, 3])], C)[0]
    multipliers = [2.0] + [1.0] * 7
    slowed = tw.simulate(W, C, "ring", stragglers="fixed", slowdowns=(x for x in multipliers))  # type: ignore[arg-type]
    assert slowed == tw.simulate(W, C, "ring", stragglers="fixed", slowdowns=multipliers)
    none: list[Layer] = []
    with pytest.raises(InputError, match="a workload needs at least one layer"):
        Workload("x", 1, (layer for layer in none))  # type: ignore[arg-type]
    assert Workload("x", 1, (layer for layer in W.layers)) == Workload("x", 1, W.layers)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "kwargs, field",
    [
        (dict(stragglers="normal", spread=-1), "spread"),
        (dict(stragglers="normal", spread=float("nan")), "spread"),
        (dict(stragglers="lognormal", spread=float("inf")), "spread"),
        (dict(stragglers="fixed", slowdowns=[1.0]), "slowdowns"),
        (dict(stragglers="fixed", slowdowns=[-1.0] * 8), "slowdowns"),
        (dict(stragglers="fixed"), "slowdowns"),
        (dict(stragglers="empirical", slowdowns=[]), "slowdowns"),
        (dict(stragglers="one"), "slowdowns"),
        (dict(stragglers="one", slowdowns=[2.0, 2.0]), "slowdowns"),
        (dict(stragglers="one", slowdowns=[0.0]), "slowdowns"),
        (dict(stragglers="one", slowdowns=[float("inf")]), "slowdowns"),
        # The kind itself is the stragglers argument.
        (dict(stragglers="bogus"), "stragglers"),
    ],
)
def test_the_cores_refusal_of_the_stragglers_numbers_names_the_argument_given(
    kwargs: dict[str, Any], field: str
) -> None:
    # The core names its field "stragglers" (the CLI's --stragglers, which holds the numbers).
    for call in (tw.simulate, tw.api.check_simulate):
        with pytest.raises(InputError) as e:
            call(W, C, "ring", **kwargs)
        assert e.value.field == field, e.value.args


def test_every_fail_refusal_names_fail() -> None:
    # rate=2 and rate=nan were refused as "failures.rate" by Failure's own check.
    for text in ("h3@1s:rate=2", "h3@1s:rate=nan", "h3@1s:rate=x", "h3", "h3@-1s", "h3@1s:speed=2"):
        with pytest.raises(InputError) as e:
            parse_failure(text)
        assert e.value.field == "fail", (text, e.value.args)
    with pytest.raises(InputError) as e:
        parse_failure("h3@1s:rate=2")
    assert "'h3@1s:rate=2'" in e.value.message and "[0, 1]" in e.value.message
