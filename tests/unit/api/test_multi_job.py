"""Several jobs on one fabric: the Python API and `tensorwire jobs`."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
import tensorwire as tw
from tensorwire import _core
from tensorwire.cli.jobs import parse_place


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tensorwire", *args], capture_output=True, text=True, timeout=120)


FABRIC = "leaf-spine:hosts_per_leaf=2,spines=1,uplink=8Gbps"
LEAVES = ("-b", "8Gbps", "--topology", "leaf-spine:hosts_per_leaf=4,spines=1,uplink=8Gbps", "--iterations", "2")


def test_two_jobs_on_one_bottleneck_each_get_half_the_rate() -> None:
    size = 2_000_000
    w = tw.Workload.collective(f"allreduce:{size}B")
    cluster = tw.Cluster(4, "8Gbps", latency=0.0, topology=FABRIC)  # 1 byte/ns everywhere
    a = tw.Job("a", w, 2, "ring", hosts=[0, 2])
    b = tw.Job("b", w, 2, "ring", hosts=[1, 3])
    together = tw.simulate_jobs([a, b], cluster)
    (alone,) = tw.simulate_jobs([a], cluster)
    assert alone.iteration_time_s == pytest.approx(2 * size / 2 * 1e-9, rel=1e-9)
    for r in together:
        assert r.iteration_time_s == pytest.approx(2 * alone.iteration_time_s, rel=1e-9)
        assert not r.folded


def test_one_job_alone_matches_simulate() -> None:
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(8, "25Gbps")
    (r,) = tw.simulate_jobs([tw.Job("a", w, 8, "ring")], cluster)
    assert r.completions_s == tw.simulate(w, cluster, "ring", fold=False).completions_s


def test_bad_jobs_name_the_field() -> None:
    w = tw.load_model("resnet50")
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([tw.Job("a", w, 6, "ring"), tw.Job("b", w, 6, "ring")], tw.Cluster(8, "25Gbps"))
    assert e.value.args == (
        "workers",
        "the fabric has 8 hosts but the jobs need 12 workers (a 6, b 6); give at least 12 hosts, or smaller jobs",
    )
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([tw.Job("a", w, 2, "ps+ina:switch_memory=1MB,credit=1MB")], tw.Cluster(8, "25Gbps"))
    assert e.value.args[0] == "jobs[0].strategy.credit"


@pytest.mark.parametrize(
    ("setting", "field"),
    [
        ({"iterations": 0}, "iterations"),
        ({"latency": -1.0}, "latency"),
        ({"per_message_overhead": -1.0}, "per_message_overhead"),
    ],
)
def test_the_core_names_each_shared_run_setting(setting: dict[str, Any], field: str) -> None:
    # A single run and a multi-job run check their shared settings alike, each by its name.
    w = tw.load_model("resnet50")
    top = tw.Cluster(4, "25Gbps").core
    args: dict[str, Any] = {"latency": 0.0, **setting}
    with pytest.raises(tw.InputError) as jobs:
        _core.simulate_jobs([("a", w.core, 4, tw.Strategy("ring").core, None)], 4, 25e9 / 8, topology=top, **args)
    latency = args.pop("latency")
    with pytest.raises(tw.InputError) as alone:
        _core.Scenario(w.core, 4, tw.Strategy("ring").core, 25e9 / 8, latency, top, **args)
    assert jobs.value.args[0] == alone.value.args[0] == field


def test_a_parameter_server_job_takes_a_host_per_server() -> None:
    w = tw.load_model("resnet50")
    ps = tw.Job("ps", w, 4, "ps:num_ps=2")
    assert ps.hosts_needed == 6
    (r,) = tw.simulate_jobs([ps], tw.Cluster(6, "25Gbps"))
    assert r.completions_s == tw.simulate(w, tw.Cluster(4, "25Gbps"), "ps:num_ps=2", fold=False).completions_s
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([ps, tw.Job("b", w, 4, "ring")], tw.Cluster(8, "25Gbps"))
    assert e.value.args == (
        "workers",
        "the fabric has 8 hosts but the jobs need 10 hosts (ps 4 workers + 2 servers, "
        "b 4 workers); give at least 10 hosts, or smaller jobs",
    )


def test_cli_jobs_keep_to_the_flow_budget() -> None:
    # Two 16-worker rings sharing a leaf-spine: ~150,000 flows (the budget is checked every
    # 65,536 events), more than 1,000.
    p = run(
        "jobs",
        "--job",
        "a:resnet50:16:ring",
        "--job",
        "b:resnet50:16:ring",
        *LEAVES,
        "--placement",
        "spread",
        "--max-flows",
        "1000",
    )
    # Refused up front: the jobs' measured iterations alone are estimated past the budget.
    line = error_line(p)
    assert line.startswith("tensorwire: error: max_flows: the jobs' 2 measured iterations need about "), line
    assert "(a " in line and ", b " in line and "more than 1000 flows" in line, line
    # Past the measured iterations' estimate, the faster job's background iterations are the
    # running check's: it stops the run and names a budget to try.
    p = run(
        "jobs", "--job", "a:resnet50:16:ring", "--job", "b:vgg16:16:ring", "-b", "25Gbps",
        "--topology", "leaf-spine:hosts_per_leaf=8,spines=2", "--placement", "spread", "--max-flows", "280000",
    )  # fmt: skip
    line = error_line(p)
    assert line.startswith("tensorwire: error: max_flows: the simulation needs more than 280000 flows"), line
    assert "what every iteration needs at this pace" in line, line
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([tw.Job("a", tw.load_model("resnet50"), 2, "ring")], tw.Cluster(2, "25Gbps"), max_flows=0)
    assert e.value.args[0] == "max_flows"


def test_cli_runs_a_parameter_server_job_beside_a_ring_job() -> None:
    p = run(
        "jobs", "--job", "ps:resnet50:4:ps:num_ps=2", "--job", "b:resnet50:4:ring:schedule=priority", *LEAVES, "--json"
    )
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    # Fabric hosts default to what the jobs take: 4 + 2 for ps (servers last), 4 for b.
    assert [(r["job"], r["hosts"]) for r in rows] == [("ps", [0, 1, 2, 3, 4, 5]), ("b", [6, 7, 8, 9])]
    assert all(r["slowdown"] >= 1.0 for r in rows)


def test_cli_prints_each_job_beside_itself_alone() -> None:
    p = run(
        "jobs",
        "--job",
        "a:resnet50:4:ring",
        "--job",
        "b:resnet50:4:ring",
        "-b",
        "8Gbps",
        "--topology",
        "leaf-spine:hosts_per_leaf=4,spines=1,uplink=8Gbps",
        "--placement",
        "spread",
        "--json",
    )
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["job"] for r in rows] == ["a", "b"]
    assert all(r["slowdown"] > 1.0 for r in rows)
    assert error_line(run("jobs", "--job", "a:resnet50:16:ring", "-n", "8", "-b", "25Gbps")) == (
        "tensorwire: error: workers: the fabric has 8 hosts but the jobs need 16 workers (a 16); "
        "give at least 16 hosts, or smaller jobs"
    )


def error_line(p: subprocess.CompletedProcess[str]) -> str:
    """The one line a refused command prints (exit status 2, nothing on stdout, no traceback)."""
    assert p.returncode == 2, p.stderr
    assert p.stdout == "" and "Traceback" not in p.stderr
    (line,) = p.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize(
    "jobs, field, says",
    [
        ([("a", 2, None), ("a", 2, None)], "jobs[1].name", '"a" is also the name of jobs[0]'),
        ([("a", 2, [0, 8])], "jobs[0].hosts", 'host 8 of job "a" is outside the fabric: its hosts are 0 to 7'),
        ([("a", 2, [3, 3])], "jobs[0].hosts", 'host 3 is given twice to job "a"'),
        ([("a", 2, [0, 1]), ("b", 2, [1, 2])], "jobs[1].hosts", 'host 1 of job "b" is also job "a"\'s'),
        ([("a", 2, [0, 1, 2])], "jobs[0].hosts", 'job "a" gives 3 hosts for 2 workers'),
        ([("a", 6, None), ("b", 3, None)], "workers", "the fabric has 8 hosts but the jobs need 9 workers (a 6, b 3)"),
    ],
)
def test_bad_placements_name_the_field(jobs: list[tuple[str, int, list[int] | None]], field: str, says: str) -> None:
    w = tw.load_model("resnet50")
    with pytest.raises(tw.InputError) as e:
        tw.simulate_jobs([tw.Job(name, w, n, "ring", hosts=h) for name, n, h in jobs], tw.Cluster(8, "25Gbps"))
    assert e.value.args[0] == field and says in e.value.args[1]


def test_jobs_refuse_negative_hosts_and_workers_by_name() -> None:
    w = tw.load_model("resnet50")
    with pytest.raises(tw.InputError) as e:
        tw.Job("a", w, 2, "ring", hosts=[-1, 0])
    assert e.value.args[0] == "jobs.hosts"
    with pytest.raises(tw.InputError) as e:
        tw.Job("a", w, -2, "ring")
    assert e.value.args[0] == "jobs.workers"


def test_parse_place_reads_hosts_and_ranges() -> None:
    assert parse_place("a=0-2,8") == ("a", [0, 1, 2, 8])
    for bad in ["a", "=1", "a=", "a=x", "a=3-1", "a=1-", "a=-1"]:
        with pytest.raises(tw.InputError) as e:
            parse_place(bad)
        assert e.value.args[0] == "place"


def test_cli_place_pins_a_job_and_the_others_take_free_hosts() -> None:
    p = run("jobs", "--job", "a:resnet50:2:ring", "--job", "b:resnet50:2:ring", "--place", "a=4-5", *LEAVES, "--json")
    assert p.returncode == 0, p.stderr
    assert [(r["job"], r["hosts"]) for r in json.loads(p.stdout)] == [("a", [4, 5]), ("b", [0, 1])]


@pytest.mark.parametrize(
    "args, line",
    [
        (["--place", "c=0-1"], "place: no job is called 'c'; the jobs are a, b"),
        (["--place", "a=0,1", "--place", "a=2,3"], "place: job 'a' is placed twice; give its hosts once"),
        (["--place", "a=0,9", "-n", "8"], 'place: host 9 of job "a" is outside the fabric: its hosts are 0 to 7'),
        (
            ["--place", "a=0-1", "--place", "b=1-2"],
            'place: host 1 of job "b" is also job "a"\'s; jobs cannot share a host',
        ),
        (["--place", "a=0-2"], 'place: job "a" gives 3 hosts for 2 workers; give one host per worker'),
        (
            ["-n", "3"],
            "workers: the fabric has 3 hosts but the jobs need 4 workers (a 2, b 2); give at least 4 hosts, or smaller jobs",
        ),
    ],
)
def test_cli_refuses_bad_placements_in_one_line(args: list[str], line: str) -> None:
    p = run("jobs", "--job", "a:resnet50:2:ring", "--job", "b:resnet50:2:ring", *LEAVES, *args)
    assert error_line(p) == f"tensorwire: error: {line}"


def test_cli_refuses_two_jobs_of_one_name() -> None:
    p = run("jobs", "--job", "a:resnet50:2:ring", "--job", "a:resnet50:2:ring", *LEAVES)
    assert error_line(p) == "tensorwire: error: job: two jobs are called 'a'; give each job its own name"


# Rail groups of 2 DGX H100: a 16-GPU job packed on its own group has its leaves to itself.
OWN_GROUPS = "rail:node=dgx-h100,nodes_per_group=2"


@pytest.mark.parametrize(
    "strategies",
    [("ddp", "ddp"), ("nccl", "ddp"), ("ring", "ddp"), ("fsdp:comm=nccl", "ring"), ("ddp", "zero3:comm=nccl")],
)
def test_nccl_timed_jobs_on_links_of_their_own_take_their_alone_time(strategies: tuple[str, str]) -> None:
    # No link carries two jobs' traffic, so jobs cannot slow each other: a job timed by
    # NCCL's model (no flows) is exact beside any other, and each takes what it takes alone.
    w = tw.load_model("resnet50")
    cluster = tw.Cluster(32, None, topology=OWN_GROUPS)
    jobs = [tw.Job(f"j{i}", w, 16, s) for i, s in enumerate(strategies)]
    together = tw.simulate_jobs(jobs, cluster)
    for s, r in zip(strategies, together):
        alone = tw.simulate(w, tw.Cluster(16, None, topology=OWN_GROUPS), s, fold=False)
        assert r.iteration_time_s == pytest.approx(alone.iteration_time_s, rel=1e-12), s
        assert r.completions_s == pytest.approx(alone.completions_s, rel=1e-12), s


def test_cli_runs_two_ddp_jobs_in_one_rail_group_each_at_its_alone_time() -> None:
    # One rail group of 4 DGX H100, the default 4 spines at one NIC each: flow-level jobs
    # could meet on a leaf's spine links, but NCCL's channels are rail-aligned (cross-rail
    # over NVLink, PXN), so an NCCL-timed job within the group loads no spine link.
    p = run(
        "jobs", "--job", "a:resnet50:16:ddp", "--job", "b:vgg16:16:ddp",
        "--topology", "rail:node=dgx-h100", "--iterations", "2", "--json",
    )  # fmt: skip
    assert p.returncode == 0, p.stderr
    reports = json.loads(p.stdout)
    assert [r["slowdown"] for r in reports] == [1.0, 1.0]
    for r, model in zip(reports, ("resnet50", "vgg16")):
        cluster = tw.Cluster(16, None, topology="rail:node=dgx-h100")
        alone = tw.simulate(tw.load_model(model), cluster, "ddp", iterations=2, fold=False)
        assert r["iteration_time_s"] == pytest.approx(alone.iteration_time_s, rel=1e-9), model


def test_cli_refuses_a_timed_job_spanning_rail_groups_beside_another_on_an_oversubscribed_rail() -> None:
    # Rail groups of 2 nodes: ddp on nodes 1 and 2 (groups 0 and 1) crosses the spines
    # between its groups; the ring on nodes 0 and 4 shares group 0's leaves with it.
    jobs = ("jobs", "--job", "a:resnet50:16:ddp", "--job", "b:resnet50:16:ring", "-n", "48", "--iterations", "2")
    topology = ("--topology", "rail:node=dgx-h100,nodes_per_group=2,spines=1,oversubscription=2")
    # Within one rail group each (packed: nodes 0-1 and 2-3), the ddp job feeds no spine.
    ok = run(*jobs, *topology, "--json")
    assert ok.returncode == 0, ok.stderr
    assert [r["slowdown"] for r in json.loads(ok.stdout)] == [1.0, 1.0]
    line = error_line(run(*jobs, *topology, "--place", "a=8-23", "--place", "b=0-7,32-39"))
    assert line == (
        "tensorwire: error: jobs[0].strategy: ddp times collectives with NCCL's model, with no flows on the "
        'links, and its traffic could meet job "b"\'s on the spine links of leaf0.0 (400 Gbps each, less than '
        "the 800 Gbps of the 2 host links that can feed them); give each job links of its own (its own leaves "
        "or rail groups, machines of its own, or spine links that carry a leaf's hosts), or use a flow-level "
        "strategy (ring, hierarchical, fsdp with comm=flows)"
    )


def _tiny(path: str, elements: int) -> None:
    tw.Workload("tiny", 8, (tw.Layer("fc", 0.0003, 0.0007, (tw.Tensor("fc.weight", elements),)),)).save(path)


def test_a_job_past_the_background_bound_says_its_slowdown_is_a_lower_bound(tmp_path: Any) -> None:
    # A job given as a workload file, over 100 times faster than VGG-16's on the same spine:
    # it stops as background load after BACKGROUND_FACTOR times the measured iterations,
    # before vgg's window ends; vgg's row says so (a lower bound, marked "≥") and so does
    # its JSON. Twenty times faster (under the bound), it runs beside vgg all along.
    fast, slower = str(tmp_path / "fast.json"), str(tmp_path / "slower.json")
    _tiny(fast, 1_000_000)
    _tiny(slower, 20_000_000)
    fabric = ("-b", "10Gbps", "--topology", "leaf-spine:hosts_per_leaf=8,spines=1,uplink=10Gbps")
    args = (*fabric, "--rank-placement", "spread")
    done = run("jobs", "--job", "vgg:vgg16:8:ring", "--job", f"fast:{fast}:8:ring", *args, "--json")
    assert done.returncode == 0, done.stderr
    vgg, tiny = json.loads(done.stdout)
    assert tiny["model"] == "tiny" and tiny["background_stopped_s"] is None
    assert vgg["background_stopped_s"] is not None and vgg["background_stopped_s"] > 0
    shown = run("jobs", "--job", "vgg:vgg16:8:ring", "--job", f"fast:{fast}:8:ring", *args)
    assert shown.returncode == 0, shown.stderr
    row = next(line for line in shown.stdout.splitlines() if line.startswith("│ vgg"))
    assert f"≥ {vgg['slowdown']:.2f}x" in row, row
    (note,) = [line for line in shown.stderr.splitlines() if "note: vgg:" in line]
    assert f"at least {_core.BACKGROUND_FACTOR} times faster" in note and "at least the one shown" in note
    beside = run("jobs", "--job", "vgg:vgg16:8:ring", "--job", f"fast:{slower}:8:ring", *args, "--json")
    assert [j["background_stopped_s"] for j in json.loads(beside.stdout)] == [None, None]
    assert "≥" not in run("jobs", "--job", "vgg:vgg16:8:ring", "--job", f"fast:{slower}:8:ring", *args).stdout


def test_a_jobs_model_is_a_built_in_name_first_then_an_existing_file(tmp_path: Any, monkeypatch: Any) -> None:
    # A file named like a built-in model in the current directory does not replace it; a
    # file runs as itself; a name that is neither says so, also for a path that is missing.
    _tiny(str(tmp_path / "resnet50"), 1_000)
    _tiny(str(tmp_path / "fast.json"), 1_000)
    monkeypatch.chdir(tmp_path)
    done = run("jobs", "--job", "a:resnet50:4:ring", "--job", "b:fast.json:4:ring", "-b", "25Gbps", "--json")
    assert done.returncode == 0, done.stderr
    assert [j["model"] for j in json.loads(done.stdout)] == ["resnet50", "tiny"]
    for model in ("nosuch.json", str(tmp_path / "fast"), "zzz"):
        refused = run("jobs", "--job", f"a:{model}:4:ring", "-b", "25Gbps")
        assert refused.returncode == 2 and len(refused.stderr.splitlines()) == 1, refused.stderr
        assert (
            "jobs[0].model: " in refused.stderr
            and "is neither a built-in model (alexnet," in refused.stderr
            and "nor an existing workload file" in refused.stderr
        )


@pytest.mark.parametrize("name", ["/etc/passwd", "../resnet50", "zoo/resnet50", "resnet50.json"])
def test_a_model_name_outside_the_zoo_is_unknown_not_a_file_read(name: str) -> None:
    # "/tmp/x" read /tmp/x.json as a zoo file without checks: a KeyError traceback.
    with pytest.raises(tw.InputError) as e:
        tw.load_model(name)
    assert e.value.field == "model" and "unknown model" in e.value.message


def test_jobs_of_one_model_share_its_workload_and_errors_still_name_the_job() -> None:
    # 1,024 jobs of resnet50 loaded it 1,024 times (2.8 s of a 12 s run): one command loads
    # each MODEL once; a workload is immutable, so sharing it changes nothing a job sees.
    from tensorwire.cli.jobs import parse_job

    loaded: dict[str, tw.Workload] = {}
    a = parse_job("a:resnet50:2:ring", None, None, 0, loaded)
    b = parse_job("b:resnet50:4:fsdp", None, None, 1, loaded)
    c = parse_job("c:vgg16:2:ring", None, None, 2, loaded)
    assert a.workload is b.workload and a.workload == tw.load_model("resnet50")
    assert c.workload is not a.workload and sorted(loaded) == ["resnet50", "vgg16"]
    with pytest.raises(tw.InputError) as e:
        parse_job("d:resnet50:2:ring:bogus=1", None, None, 3, loaded)
    assert e.value.args[0] == "jobs[3].strategy.bogus"
