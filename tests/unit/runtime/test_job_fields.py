"""`measure`'s Job refuses every field out of range when it is made (the Python API, or the
JSON a torchrun worker gets), naming the field: `timeout_s=-1`, text for a seed or a
bucket of 0 MB were taken and failed later, deep in torch or `datetime`, or not at all
(`bucket_cap_mb` on a mode that has no buckets)."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from tensorwire import InputError
from tensorwire.limits import MAX_TIMEOUT_S, check_timeout
from tensorwire.torch.measuring import Job, job_from_json


@pytest.mark.parametrize(
    ("fields", "field", "says"),
    [
        ({"timeout_s": -1}, "timeout_s", "number of seconds > 0"),
        ({"timeout_s": "30"}, "timeout_s", "number of seconds > 0"),
        ({"timeout_s": math.inf}, "timeout_s", "at most 31,536,000"),
        ({"timeout_s": math.nan}, "timeout_s", "number of seconds > 0"),
        ({"mode": "ddp", "bucket_cap_mb": 0}, "bucket_cap_mb", "size in MB > 0"),
        ({"bucket_cap_mb": 25}, "bucket_cap_mb", "mode 'priority' does not use it"),
        ({"autotune_trials": -1}, "autotune_trials", "integer >= 0"),
        ({"mode": "fifo", "autotune_trials": 2}, "autotune_trials", "use mode 'priority'"),
        ({"seed": "1"}, "seed", "integer >= 0"),
        ({"seed": 2**63}, "seed", "below 2**63"),
        ({"seed": True}, "seed", "integer >= 0"),
        ({"model": 5}, "model", "is not a model"),
        ({"model": " "}, "model", "is not a model"),
        ({"model": "zoo:alexnet", "size_scale": -1}, "size_scale", "factor > 0"),
        ({"model": "zoo:alexnet", "time_scale": 1e4}, "time_scale", "at most 1,000"),
        ({"input_shape": (3, 0)}, "input_shape", "integers >= 1"),
        ({"input_shape": ()}, "input_shape", "integers >= 1"),
    ],
)
def test_a_field_out_of_range_is_refused_naming_it(fields: dict[str, Any], field: str, says: str) -> None:
    with pytest.raises(InputError) as e:
        Job(**fields)
    assert e.value.args[0] == field and says in e.value.args[1]


def test_the_json_a_worker_gets_is_checked_the_same_way() -> None:
    with pytest.raises(InputError, match="timeout_s"):
        job_from_json(json.dumps({"timeout_s": -5}))
    job = job_from_json(json.dumps({"mode": "ddp", "bucket_cap_mb": 10, "timeout_s": 30, "seed": 7}))
    assert (job.bucket_cap_mb, job.timeout_s, job.seed) == (10, 30, 7)


@given(st.floats(allow_nan=True, allow_infinity=True) | st.integers() | st.text(max_size=3) | st.none())
def test_a_timeout_is_taken_exactly_when_it_is_a_finite_number_of_seconds_in_range(value: Any) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_TIMEOUT_S
    if ok:
        assert check_timeout(value) == float(value)
    else:
        with pytest.raises(InputError, match="timeout_s"):
            check_timeout(value)


def test_a_jobs_sample_shape_is_bounded_as_measures_is() -> None:
    # One rule (check_input_shape) for --input-shape, profile() and a Job from JSON: a Job of
    # 3e10 elements a sample was taken and tried to allocate it in every worker.
    with pytest.raises(InputError) as e:
        Job(input_shape=(3, 100_000, 100_000))
    assert e.value.args[0] == "input_shape" and "elements a sample; at most 268,435,456" in e.value.args[1]
    assert Job(input_shape=(3, 8, 8)).input_shape == (3, 8, 8)
