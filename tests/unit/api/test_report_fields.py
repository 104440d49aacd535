"""The core's Report crosses as ``_core.Report``; every field reaches :class:`Result` by
name, under a new name (``RENAMED_REPORT_FIELDS``) or is dropped on purpose
(``DROPPED_REPORT_FIELDS``), so a metric is added in the core and the glue only."""

from __future__ import annotations

import dataclasses

import tensorwire as tw
from tensorwire import _core
from tensorwire.api import DROPPED_REPORT_FIELDS, RENAMED_REPORT_FIELDS, report_fields
from tensorwire.result import Result


def test_every_report_field_reaches_result_or_is_dropped_on_purpose() -> None:
    result_fields = {f.name for f in dataclasses.fields(Result)}
    fields = set(report_fields())
    assert "iteration_time_s" in fields and "nap" in fields
    assert DROPPED_REPORT_FIELDS <= fields and set(RENAMED_REPORT_FIELDS) <= fields
    for name in fields - DROPPED_REPORT_FIELDS:
        assert RENAMED_REPORT_FIELDS.get(name, name) in result_fields, name
    # What Result has beyond the Report is the run's own description.
    extra = result_fields - {RENAMED_REPORT_FIELDS.get(n, n) for n in fields}
    assert extra == {"model", "workers", "bandwidth", "strategy"}


def test_simulate_returns_the_core_report_values() -> None:
    w = tw.Workload.collective("allreduce:1MiB")
    c = tw.Cluster(4, "10Gbps")
    raw = _core.Scenario(w.core, 4, tw.Strategy("ring").core, c.bandwidth, c.latency, c.core).simulate()
    assert isinstance(raw, _core.Report)
    r = tw.simulate(w, c, "ring")
    assert r.iteration_time_s == raw.iteration_time_s
    assert r.link_utilization == dict(raw.link_utilization)
    assert r.completions_s == tuple(raw.completions_s)


def test_active_processes_keeps_nap_as_its_old_name() -> None:
    w = tw.Workload.collective("allreduce:1MiB")
    r = tw.simulate(w, tw.Cluster(4, "10Gbps"), "ring:partial=solo", stragglers="normal", spread=0.3)
    assert r.active_processes is not None and r.nap == r.active_processes
    d = r.to_dict()
    assert d["nap"] == r.active_processes and "active_processes" not in d
    assert tw.simulate(w, tw.Cluster(4, "10Gbps"), "ring").nap is None


def test_cluster_holds_its_parsed_topology_and_still_pickles() -> None:
    import pickle

    c = tw.Cluster(8, "10Gbps", topology="leaf-spine:hosts_per_leaf=4", placement="spread")
    assert isinstance(c.core, _core.Topology) and c.core.name == "leaf-spine"
    back = pickle.loads(pickle.dumps(c))
    assert back == c and back.core.spec == c.topology
