"""``tensorwire profile`` and ``tensorwire measure`` (click commands; torch imported when run).

The main CLI registers these command objects; importing this module needs click only.
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Optional, TypeVar

import click

from tensorwire._core import InputError
from tensorwire.cli import options
from tensorwire.io import check_workload_output
from tensorwire.torch.launch import MAX_LOCAL_PROCESSES
from tensorwire.torch.measuring import MAX_ZOO_SCALE
from tensorwire.torch.shapes import check_input_shape
from tensorwire.units import format_bytes, format_rate, format_seconds


def _threads(ctx: click.Context, param: click.Parameter, value: Optional[int]) -> Optional[int]:
    """``--threads``: 1 to this machine's CPUs. More torch threads than cores only contend,
    and torch was handed 100,000 of them unchecked (a segmentation fault after 5 s)."""
    cpus = os.cpu_count() or 1
    if value is not None and value > cpus:
        raise InputError("threads", f"{value} is more than this machine's {cpus} CPUs; give 1 to {cpus}")
    return value


F = TypeVar("F", bound=Callable[..., Any])


def _shape(ctx: click.Context, param: click.Parameter, value: Optional[str]) -> Optional[tuple[int, ...]]:
    if value is None:
        return None
    try:
        dims = tuple(int(x) for x in value.lower().split("x"))
    except ValueError:
        raise InputError("input_shape", f"{value!r} must look like 3x224x224") from None
    return check_input_shape(dims, repr(value))


def _zoo_scale(flag: str, what: str) -> Callable[[F], F]:
    """A ``zoo:`` model's scale option: a factor in (0, 1000] on its ``what``."""
    return click.option(
        flag,
        type=click.FloatRange(min=0, min_open=True, max=MAX_ZOO_SCALE),
        default=1.0,
        show_default=True,
        help=f"zoo: models: {what} times this (at most {MAX_ZOO_SCALE:g}).",
    )


def _need_torch() -> None:
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise InputError("torch", "not installed; pip install 'tensorwire[torch]'")


@click.command("profile")
@click.argument("model")
@click.option("--output", "-o", type=click.Path(dir_okay=False), required=True, help="Workload file to write (JSON).")
@click.option("--batch", type=click.IntRange(min=1), default=32, show_default=True, help="Batch size.")
@click.option(
    "--input-shape", callback=_shape, default=None, help="One sample's shape, e.g. 3x224x224 (default per model)."
)
@click.option(
    "--iterations", type=click.IntRange(min=1), default=5, show_default=True, help="Profiled iterations (median kept)."
)
@click.option(
    "--warmup", type=click.IntRange(min=0), default=2, show_default=True, help="Iterations run first and not kept."
)
@click.option("--device", default="cpu", show_default=True, help="cpu, cuda or cuda:N.")
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=None,
    callback=_threads,
    help="torch intra-op threads, at most this machine's CPUs (default: torch's).",
)
@click.option("--name", default=None, callback=options.workload_name, help="Workload name (default: the model's).")
@click.option("--json", "as_json", is_flag=True, help="Print the workload as JSON too.")
def profile(
    model: str,
    output: str,
    batch: int,
    input_shape: Optional[tuple[int, ...]],
    iterations: int,
    warmup: int,
    device: str,
    threads: Optional[int],
    name: Optional[str],
    as_json: bool,
) -> None:
    """Run MODEL for some iterations on this device and write its workload file.

    MODEL is a torchvision model (resnet50, vgg16, ...; random weights, random inputs) or
    package.module:factory. `tensorwire simulate --workload FILE` reads the result.
    """
    check_workload_output(output, "output")
    _need_torch()
    import torch

    from tensorwire.torch.profiling import profile as run

    if threads is not None:
        torch.set_num_threads(threads)
    w = run(
        model, batch_size=batch, input_shape=input_shape, iterations=iterations, warmup=warmup, device=device, name=name
    )
    w.save(output)
    if as_json:
        click.echo(json.dumps(w.to_dict(), indent=1))
        return
    fwd = sum(layer.forward_s for layer in w.layers)
    bwd = sum(layer.backward_s for layer in w.layers)
    click.echo(
        f"{w.name}: {len(w.layers)} layers, {len(w.tensors)} tensors, {format_bytes(w.total_bytes)} of gradients; "
        f"forward {format_seconds(fwd)}, backward {format_seconds(bwd)} at batch {w.batch_size}"
    )
    click.echo(f"wrote {output}")


@click.command("measure")
@click.option(
    "--model",
    "-m",
    default="resnet18",
    show_default=True,
    help="torchvision model, package.module:factory, or zoo:NAME (emulated compute).",
)
@click.option(
    "--workers",
    "-n",
    type=click.IntRange(min=2, max=MAX_LOCAL_PROCESSES),
    default=2,
    show_default=True,
    help=f"Processes of the N-process run (at most {MAX_LOCAL_PROCESSES}, all on this machine).",
)
@click.option(
    "--mode",
    type=click.Choice(["priority", "fifo", "fusion", "ddp"]),
    default="priority",
    show_default=True,
    help="How gradients are synchronised.",
)
@click.option("--partition", default=None, help="Piece size, e.g. 1MiB (priority default 4MiB).")
@click.option("--credit", default=None, help="Bytes in flight, e.g. 4MiB (priority default 16MiB).")
@click.option(
    "--batch",
    type=click.IntRange(min=1),
    default=None,
    help="Per-worker batch size [default: 8; a zoo: model runs its own, at which its compute times were measured].",
)
@click.option("--input-shape", callback=_shape, default=None, help="One sample's shape (torchvision models).")
@click.option("--iterations", type=click.IntRange(min=1), default=10, show_default=True, help="Timed iterations.")
@click.option("--warmup", type=click.IntRange(min=0), default=3, show_default=True, help="Untimed iterations first.")
@_zoo_scale("--size-scale", "tensor sizes")
@_zoo_scale("--time-scale", "compute times")
@click.option("--link-rate", default=None, help="Link rate per host, e.g. 10Gbps, for the utilisation.")
@click.option("--interface", default=None, help="Count bytes on this network interface instead of estimating them.")
@click.option(
    "--threads",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    callback=_threads,
    help="torch threads per process, at most this machine's CPUs.",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def measure(
    model: str,
    workers: int,
    mode: str,
    partition: Optional[str],
    credit: Optional[str],
    batch: Optional[int],
    input_shape: Optional[tuple[int, ...]],
    iterations: int,
    warmup: int,
    size_scale: float,
    time_scale: float,
    link_rate: Optional[str],
    interface: Optional[str],
    threads: int,
    as_json: bool,
) -> None:
    """Run a job on 1 and on N processes (Gloo, this machine); report the scaling factor
    T_n/(n T_1), T the throughput in samples/s, and the network throughput against the link
    rate (Zhang et al. 2020, seed 001)."""
    _need_torch()
    from tensorwire.torch.measuring import Job
    from tensorwire.torch.measuring import measure as run

    job = Job(
        model, batch, mode, partition, credit, iterations=iterations, warmup=warmup, input_shape=input_shape,
        size_scale=size_scale, time_scale=time_scale, interface=interface,
    )  # fmt: skip
    m = run(job, workers, link_rate=link_rate, threads=threads)
    if as_json:
        click.echo(json.dumps(m.to_dict(), indent=1))
        return
    click.echo(f"{m.model}, {m.mode}, batch {m.batch_size} per worker")
    click.echo(f"  1 process : {format_seconds(m.iteration_time_1_s)} per iteration, {m.throughput_1:.1f} samples/s")
    click.echo(
        f"  {m.workers} processes: {format_seconds(m.iteration_time_n_s)} per iteration, {m.throughput_n:.1f} samples/s"
    )
    click.echo(f"  scaling factor (samples/s on {m.workers}) / ({m.workers} x samples/s on 1): {m.scaling_factor:.3f}")
    click.echo(f"  bytes per worker and iteration: {format_bytes(m.bytes_per_iteration)} ({m.bytes_counted_on})")
    line = f"  network throughput per worker: {format_rate(m.network_throughput)}"
    if m.utilization is not None and m.link_rate is not None:
        line += f" = {100 * m.utilization:.1f}% of {format_rate(m.link_rate)}"
    click.echo(line)


__all__ = ["measure", "profile"]
