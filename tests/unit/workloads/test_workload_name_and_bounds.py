"""A workload's name is not empty (it titled tables ": ring, 4 workers"), and a file's value
past a bound says the bound as the integer it is (pydantic printed U64_MAX as the float
18446744073709552000)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tensorwire as tw
from tensorwire.limits import U64_MAX


@pytest.mark.parametrize("name", ["", "   "])
def test_an_empty_name_is_refused(name: str) -> None:
    with pytest.raises(tw.InputError) as e:
        tw.Workload(name, 8, (tw.Layer("a", 0.1, 0.1, (tw.Tensor("w", 100),)),))
    assert e.value.field == "workload.name" and "is empty" in e.value.message


def test_a_value_past_a_files_bound_names_the_bound_exactly(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    layer = {"name": "l", "forward_s": 0.001, "backward_s": 0.002, "tensors": [{"name": "w", "bytes": 10**30}]}
    path.write_text(json.dumps({"format": "tensorwire-workload/1", "name": "x", "batch_size": 8, "layers": [layer]}))
    with pytest.raises(tw.InputError) as e:
        tw.Workload.from_file(path)
    assert e.value.field == "workload.layers.0.tensors.0.bytes"
    assert e.value.message.endswith(f"need at most {U64_MAX}"), e.value.message
