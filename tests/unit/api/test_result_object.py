"""A Result and a Job as Python objects: hashing, and a repr that stays short."""

from __future__ import annotations

import copy
import pickle

import pytest
import tensorwire as tw

W = tw.load_model("resnet50")


def test_a_result_is_explicitly_unhashable() -> None:
    # hash() raised "unhashable type: 'mappingproxy'" from the frozen dataclass's generated hash.
    r = tw.simulate(W, tw.Cluster(4, "25Gbps"), "ring")
    assert tw.Result.__hash__ is None
    with pytest.raises(TypeError, match="unhashable type: 'Result'"):
        hash(r)
    assert r == tw.simulate(W, tw.Cluster(4, "25Gbps"), "ring")  # still compared by value


def test_a_job_is_hashable_whichever_sequence_gave_its_hosts() -> None:
    # A list of hosts made the job unhashable ("unhashable type: 'list'").
    listed = tw.Job("a", W, 4, "ring", hosts=[0, 1, 2, 3])
    assert listed.hosts == (0, 1, 2, 3)
    assert hash(listed) == hash(tw.Job("a", W, 4, "ring", hosts=(0, 1, 2, 3)))
    assert len({listed, tw.Job("a", W, 4, "ring", hosts=range(4)), tw.Job("a", W, 4, "ring")}) == 2
    assert pickle.loads(pickle.dumps(listed)) == listed


def test_a_results_repr_counts_its_links_and_spans() -> None:
    # 1,024 workers printed about 70 kB (every link's utilisation).
    big = tw.simulate(W, tw.Cluster(1024, "25Gbps"), "ring")
    text = repr(big)
    assert len(text) < 1500, len(text)
    assert f"link_utilization=<{len(big.link_utilization)} links>" in text and "timeline=<0 spans>" in text
    assert text.startswith("Result(model='resnet50', workers=1024,") and "iteration_time_s=" in text
    traced = tw.simulate(W, tw.Cluster(4, "25Gbps"), "ring", timeline=True, iterations=2)
    assert f"timeline=<{len(traced.timeline)} spans>" in repr(traced)
    assert f"completions_s=<{len(traced.completions_s)} completions>" in repr(traced)
    nccl = tw.simulate(W, tw.Cluster(16, None, topology="rail:node=dgx-h100"), "ddp")
    assert f"nccl_choices=<{len(nccl.nccl_choices)} choice" in repr(nccl)
    # Equality and pickling see every field, as before.
    for other in (pickle.loads(pickle.dumps(traced)), copy.deepcopy(traced)):
        assert other == traced and other.timeline == traced.timeline


def test_a_workloads_repr_counts_its_layers() -> None:
    # An LLM's workload printed about 60 kB.
    w = tw.load_model("llama3_70b", gpu="h100")
    text = repr(w)
    assert len(text) < 600, len(text)
    assert f"layers=<{len(w.layers)} layers>" in text and f"sources=<{len(w.sources)} sources>" in text
    assert text.startswith("Workload(name='llama3_70b', batch_size=")
    assert pickle.loads(pickle.dumps(w)) == w and hash(copy.deepcopy(w)) == hash(w)
