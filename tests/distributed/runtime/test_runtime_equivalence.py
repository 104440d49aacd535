"""ScheduledDataParallel equals plain synchronous data-parallel training, in every mode.

One launch of 3 Gloo processes runs every scenario (processes are slow to start); the
tests below check each scenario's numbers. Reference: every gradient all-reduced (sum),
divided by the number of workers, then the same optimizer's step, from the same seed.
"""

from __future__ import annotations

from typing import Any

import pytest

WORKERS = 3

pytestmark = [pytest.mark.distributed, pytest.mark.needs_torch]


@pytest.fixture(scope="module")
def results() -> list[dict[str, Any]]:
    import _runtime_jobs as jobs
    from tensorwire.torch import run_local

    return list(run_local(jobs.equivalence, WORKERS, timeout_s=240))


def _labels() -> list[str]:
    try:
        import _runtime_jobs as jobs
    except ImportError:  # torch missing: the tests are skipped anyway
        return ["skipped"]
    return [f"{label}/{o}" for o, labels in jobs.OPTIMIZERS.items() for label in labels]


@pytest.mark.parametrize("scenario", _labels())
def test_every_mode_matches_synchronous_training(results: list[dict[str, Any]], scenario: str) -> None:
    for rank, r in enumerate(results):
        got = r[scenario]
        scaled, worst, _bitwise = got["diff"]
        assert scaled <= 1, (
            f"rank {rank}: parameters differ by up to {worst:.2e} after the steps (beyond float32 rounding)"
        )
        assert got["grads_none"], "param.grad is left None (gradients live in the runtime)"
        assert got["state_entries"] == 6, "the user's optimizer holds the state of all 6 parameters"
    groups = {r[scenario]["groups"] for r in results}
    assert len(groups) == 1, f"ranks issued different numbers of operations: {groups}"


def test_partitions_and_fusion_change_the_operations(results: list[dict[str, Any]]) -> None:
    g = {k: v["groups"] for k, v in results[0].items() if "groups" in v}
    steps = 4
    assert g["fifo/sgd"] == 6 * steps, "fifo without a partition: one all-reduce per tensor"
    assert g["priority:partition=124,credit=250/sgd"] > g["priority:partition=300,credit=1000/sgd"] > g["fifo/sgd"]
    assert g["fusion:partition=200,fusion=64KiB,cycle=5ms/sgd"] < g["fusion:partition=200,fusion=900B,cycle=1ms/sgd"]


def test_whole_tensors_give_bit_identical_parameters(results: list[dict[str, Any]]) -> None:
    for r in results:
        for o in ("sgd", "adam", "adamw"):
            assert r[f"fifo/{o}"]["diff"][2], "the same all-reduces as the reference, so the same bits"


def test_bad_arguments_are_refused_naming_the_field(results: list[dict[str, Any]]) -> None:
    fields = ["optimizer", "optimizer", "mode", "partition", "fusion_bytes", "autotune", "timeout_s", "max_grad_norm"]
    for r in results:
        assert r["refused"] == [*fields, "transport", "group"]


def test_a_model_with_lazy_parameters_is_refused_until_a_forward_pass(results: list[dict[str, Any]]) -> None:
    for r in results:
        said = r["lazy"]["refused"]
        assert said.startswith("module: parameter 'head.weight' (and 1 more) is not initialised yet"), said
        assert "run one forward pass first" in said
        assert r["lazy"]["accepted_after_forward"]


def test_learning_rate_schedule_is_followed(results: list[dict[str, Any]]) -> None:
    for r in results:
        assert r["priority+StepLR/sgd"]["diff"][0] <= 1


@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_max_grad_norm_clips_as_torchs_clip_grad_norm(results: list[dict[str, Any]], optimizer: str) -> None:
    import _runtime_jobs as jobs

    for r in results:
        got = r[f"clip/{optimizer}"]
        assert all(n > jobs.CLIP for n in got["ref_norms"]), "the bound clips every step (else this tests nothing)"
        assert got["diff"][0] <= 1, f"parameters differ by up to {got['diff'][1]:.2e} from clip_grad_norm_'s"
        assert got["norm"] == pytest.approx(got["ref_norms"][-1], rel=1e-5), "last_grad_norm is the last norm"


def test_parameters_in_a_container_never_called_are_waited_for(results: list[dict[str, Any]]) -> None:
    for r in results:
        assert r["ParameterList/sgd"]["diff"][0] <= 1


def test_autotuning_switches_every_rank_at_the_same_iteration(results: list[dict[str, Any]]) -> None:
    histories = [r["autotune/adam"]["history"] for r in results]
    assert all(h == histories[0] for h in histories), histories
    assert len(histories[0]) >= 3, f"expected several configurations, got {histories[0]}"
    trials = results[0]["autotune/adam"]["trials"]
    assert len(trials) == 4 and all(t[2] is not None and t[2] > 0 for t in trials)
    assert all(64 <= p <= 2048 and p <= c <= 4 * p for p, c, _ in trials)
    assert all(not r["autotune/adam"]["trials"] for r in results[1:]), "only the leader tunes"
    for r in results:
        assert r["autotune/adam"]["diff"][0] <= 1, "changing partition and credit must not change the result"
