"""``tensorwire bench partial``: Li et al. 2019's partial all-reduce microbenchmark.

``bench`` is a click group the main CLI registers; importing this module needs click only
(torch is imported when the command runs).
"""

from __future__ import annotations

import importlib.util
import json
from typing import Optional

import click

from tensorwire._core import InputError
from tensorwire.units import format_seconds, to_seconds

#: Longest skew step or period, seconds: a run of the microbenchmark waits (P-1) x d each iteration.
MAX_SKEW_S = 60.0

_KINDS = ("solo", "majority", "blocking")


def _processes(ctx: click.Context, param: click.Parameter, value: str) -> list[int]:
    from tensorwire.torch.launch import MAX_LOCAL_PROCESSES

    items = [v.strip() for v in value.split(",")]
    if not all(items) or not all(v.isdigit() for v in items):
        raise InputError("processes", f"{value!r} must be integers such as 4,8,16, separated by single commas")
    out = [int(v) for v in items]
    if any(not 2 <= p <= MAX_LOCAL_PROCESSES for p in out):
        raise InputError(
            "processes", f"{value!r}: each count must be from 2 to {MAX_LOCAL_PROCESSES} (local processes)"
        )
    return out


def _kinds(ctx: click.Context, param: click.Parameter, value: str) -> list[str]:
    kinds = [k.strip() for k in value.split(",") if k.strip()]
    bad = [k for k in kinds if k not in _KINDS]
    if bad or not kinds:
        raise InputError("kinds", f"{value!r}: choose among {', '.join(_KINDS)}")
    return kinds


@click.group("bench")
def bench() -> None:
    """Microbenchmarks of the runtime on this machine (local processes, Gloo)."""


@bench.command("partial")
@click.option(
    "--processes",
    "-p",
    default="4,8,16",
    show_default=True,
    callback=_processes,
    help="Process counts to run, comma-separated.",
)
@click.option(
    "--delay",
    "-d",
    default="10ms",
    show_default=True,
    help="Skew step d: rank r calls r*d after the others' common start.",
)
@click.option(
    "--iterations", "-i", type=click.IntRange(min=1), default=50, show_default=True, help="Timed iterations per kind."
)
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True, help="Untimed iterations first.")
@click.option(
    "--numel",
    type=click.IntRange(min=1, max=1 << 28),
    default=1024,
    show_default=True,
    help="float32 elements all-reduced (at most 2^28, 1 GiB).",
)
@click.option(
    "--kinds", default="solo,majority,blocking", show_default=True, callback=_kinds, help="Collectives to compare."
)
@click.option("--period", default=None, help="Time between iteration starts (default 1.25*(P-1)*d + 100ms).")
@click.option("--seed", type=int, default=0, show_default=True, help="Shared seed of majority initiators.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def partial(
    processes: list[int],
    delay: str,
    iterations: int,
    warmup: int,
    numel: int,
    kinds: list[str],
    period: Optional[str],
    seed: int,
    as_json: bool,
) -> None:
    """Li et al. 2019's microbenchmark: P processes linearly skewed (rank r waits r*d before
    calling); mean latency of solo, majority and blocking all-reduce over all ranks and
    iterations, the speedup over blocking, and the number of active processes (NAP)."""
    if importlib.util.find_spec("torch") is None:
        raise InputError("torch", "not installed; pip install 'tensorwire[torch]'")
    from tensorwire.torch.partial.bench import microbenchmark

    delay_s = to_seconds(delay, "delay")
    period_s = to_seconds(period, "period") if period is not None else None
    for field, value in (("delay", delay_s), ("period", period_s)):
        if value is not None and value > MAX_SKEW_S:
            raise InputError(field, f"{format_seconds(value)} is longer than the {MAX_SKEW_S:g} s a run may wait")
    results = []
    for p in processes:
        r = microbenchmark(
            p, delay_s, iterations=iterations, warmup=warmup, numel=numel, kinds=kinds, seed=seed, period_s=period_s
        )
        results.append(r)
        if not as_json:
            late = sum(r.overruns.values())
            click.echo(
                f"P={p}, d={format_seconds(delay_s)}, {iterations} iterations, {numel} float32"
                + (f" ({late} late starts)" if late else "")
            )
            for k in kinds:
                line = f"  {k:<9} mean latency {format_seconds(r.latency_s[k]):>10}   NAP {r.nap[k]:5.2f}"
                if k == "majority":
                    line += f" (draws: {r.expected_majority_nap:.2f})"
                if k != "blocking" and "blocking" in kinds:
                    line += f"   speedup over blocking {r.speedup(k):.2f}x"
                click.echo(line)
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=1))


__all__ = ["bench", "partial"]
