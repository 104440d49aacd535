"""hsdp's default shard group is a machine's GPUs; a fabric without machines (a star) counts
8 ranks, and its refusal says so rather than naming "a machine's 8 GPUs" a star has not."""

from __future__ import annotations

import pytest
import tensorwire as tw


@pytest.mark.parametrize(
    ("topology", "says"),
    [
        ("star", "8 ranks (a machine's GPUs, where a fabric without machines counts 8) do not divide 12 workers"),
        ("rail:node=dgx-h100", "a machine's 8 GPUs do not divide 12 workers"),
    ],
)
def test_the_default_shard_group_is_named_as_the_fabric_has_it(topology: str, says: str) -> None:
    with pytest.raises(tw.InputError) as e:
        tw.simulate(tw.load_model("resnet50"), tw.Cluster(12, "25Gbps", topology=topology), "hsdp", iterations=1)
    assert e.value.field == "strategy.shard_group" and says in e.value.message, e.value.message
    assert "hsdp:shard_group=G with G one of 1, 2, 3, 4, 6, 12" in e.value.message
