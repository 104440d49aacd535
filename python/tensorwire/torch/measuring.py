"""``measure``: is the network the bottleneck? (Zhang et al. 2020, seed 001)

Runs the same training job on 1 process and on N processes and reports

- the scaling factor ``T_n / (n T_1)`` (``T``: samples per second; 1 is linear scaling);
- the gradient bytes each worker sends per iteration: counted on a network interface
  when one is named (``interface``, e.g. a testbed host's), else the ring all-reduce's
  ``2 (N-1)/N x gradient bytes`` (what Gloo's and NCCL's ring algorithms send);
- the achieved network throughput (those bytes over the iteration time) and, given the
  link rate, the utilisation: throughput / link rate. Zhang et al. 2020 (seed 001) found utilisation high at
  1-10 Gbps and low at 100 Gbps, i.e. the software, not the link, was the limit there.

Jobs: a torchvision model by name (real compute), ``package.module:factory``, or
``zoo:NAME`` — a zoo workload with emulated compute (:mod:`tensorwire.torch.emulate`: real
tensor sizes times ``size_scale``, the zoo's compute times times ``time_scale``), which is
what makes loopback measurements meaningful on a machine with few cores.

Processes run on this machine over Gloo (127.0.0.1, or a testbed's addresses). Under
torchrun, ``python -m tensorwire.torch.measuring --job '{"model": "resnet50", "mode": "priority"}'``
runs one worker of the job with torchrun's environment and prints rank 0's timing as JSON.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence, Union

from tensorwire._core import InputError
from tensorwire.limits import check_positive, check_timeout
from tensorwire.torch.shapes import check_input_shape
from tensorwire.torch.tasks import MODES, SchedulerConfig, Size
from tensorwire.units import format_bytes, to_rate

JOB_MODES = (*MODES, "ddp")
#: Largest ``size_scale`` / ``time_scale`` (``measure --size-scale``'s bound).
MAX_ZOO_SCALE = 1e3
#: Largest DDP bucket, MB: torch takes any, but one above the largest model here is one bucket.
MAX_BUCKET_CAP_MB = 1e6


@dataclass(frozen=True)
class Job:
    """A training job to time (see the module docstring for ``model``).

    ``mode``: ``priority``, ``fifo``, ``fusion`` (:class:`~tensorwire.torch.ScheduledDataParallel`)
    or ``ddp`` (torch's DistributedDataParallel); one process always trains without either.
    """

    model: str = "resnet18"
    #: Per-worker batch; None: 8, or for a ``zoo:`` model its workload's batch, the one its
    #: compute times were measured at (another is refused: the emulated compute would not
    #: change with it, only the samples/s computed from it).
    batch_size: Optional[int] = None
    mode: str = "priority"
    partition: Size = None
    credit: Size = None
    fusion_bytes: Size = None
    fusion_cycle_s: Union[float, str, None] = None
    iterations: int = 10
    warmup: int = 3
    input_shape: Optional[tuple[int, ...]] = None
    size_scale: float = 1.0
    time_scale: float = 1.0
    interface: Optional[str] = None
    seed: int = 0
    timeout_s: Optional[float] = None
    #: DDP's bucket size in MB (torch's default 25 MB when None).
    bucket_cap_mb: Optional[float] = None
    #: ``priority`` only: auto-tune partition and credit for this many trials (of 3
    #: iterations each) before the timed iterations.
    autotune_trials: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model.strip():
            raise InputError(
                "model",
                f"{self.model!r:.80} is not a model; give a torchvision name, package.module:factory or zoo:NAME",
            )
        if self.mode not in JOB_MODES:
            raise InputError("mode", f"{self.mode!r} is not a mode; choose one of {', '.join(JOB_MODES)}")
        if self.mode != "ddp":
            SchedulerConfig.make(self.mode, self.partition, self.credit, self.fusion_bytes, self.fusion_cycle_s)
        else:
            for field in ("partition", "credit", "fusion_bytes", "fusion_cycle_s"):
                if getattr(self, field) is not None:
                    raise InputError(
                        field, "applies to the runtime's modes (priority, fifo, fusion), not to torch's ddp"
                    )
        zoo = self.model.startswith("zoo:")
        for field, applies in (
            ("input_shape", not zoo),
            ("size_scale", zoo),
            ("time_scale", zoo),
        ):
            default = None if field == "input_shape" else 1.0
            if not applies and getattr(self, field) != default:
                kinds = "torchvision and factory models" if zoo else "zoo: models"
                raise InputError(field, f"applies to {kinds}, not to {self.model}")
        own = self.default_batch()
        if zoo and self.batch_size is not None and self.batch_size != own:
            raise InputError(
                "batch_size",
                f"{self.model} runs the zoo's compute times, measured at batch {own}; leave the batch out "
                "(another would change the samples/s, not the compute)",
            )
        if self.batch_size is None:
            object.__setattr__(self, "batch_size", own)
        for field, v, least in (
            ("batch_size", self.batch_size, 1),
            ("iterations", self.iterations, 1),
            ("warmup", self.warmup, 0),
            ("autotune_trials", self.autotune_trials, 0),
            ("seed", self.seed, 0),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise InputError(field, f"{v!r} must be an integer >= {least}")
        if self.seed >= 2**63:  # torch.manual_seed takes a 64-bit signed seed
            raise InputError("seed", f"{self.seed} is not allowed; need an integer below 2**63")
        if self.autotune_trials and self.mode != "priority":
            raise InputError(
                "autotune_trials",
                f"tunes partition and credit, which mode {self.mode!r} does not use; use mode 'priority'",
            )
        if self.bucket_cap_mb is not None:
            if self.mode != "ddp":
                raise InputError(
                    "bucket_cap_mb",
                    f"is DDP's bucket size; mode {self.mode!r} does not use it (use partition or fusion_bytes)",
                )
            check_positive("bucket_cap_mb", self.bucket_cap_mb, "a size in MB", MAX_BUCKET_CAP_MB)
        if self.timeout_s is not None:
            check_timeout(self.timeout_s)
        for field in ("size_scale", "time_scale"):
            check_positive(field, getattr(self, field), "a factor", MAX_ZOO_SCALE)
        if self.input_shape is not None:
            object.__setattr__(self, "input_shape", check_input_shape(self.input_shape))
        if self.interface is not None and not Path(f"/sys/class/net/{self.interface}").exists():
            raise InputError("interface", f"{self.interface!r} is not a network interface here")

    @property
    def batch(self) -> int:
        """The batch it runs (``batch_size`` once filled in)."""
        assert self.batch_size is not None  # filled in by __post_init__
        return self.batch_size

    def default_batch(self) -> int:
        """8, or a ``zoo:`` model's own batch."""
        if self.model.startswith("zoo:"):
            from tensorwire.workloads import load_model

            return load_model(self.model[4:]).batch_size
        return 8


@dataclass(frozen=True)
class Measurement:
    """What :func:`measure` found (seconds, bytes, bytes/s)."""

    model: str
    mode: str
    workers: int
    batch_size: int
    iteration_time_1_s: float
    iteration_time_n_s: float
    gradient_bytes: int
    bytes_per_iteration: float
    bytes_counted_on: str
    link_rate: Optional[float]

    @property
    def throughput_1(self) -> float:
        """Samples per second on one process."""
        return self.batch_size / self.iteration_time_1_s

    @property
    def throughput_n(self) -> float:
        """Samples per second on all ``workers`` together."""
        return self.workers * self.batch_size / self.iteration_time_n_s

    @property
    def scaling_factor(self) -> float:
        """``T_n / (n T_1)``; 1 is linear scaling."""
        return self.throughput_n / (self.workers * self.throughput_1)

    @property
    def network_throughput(self) -> float:
        """Bytes per second each worker sent, averaged over the iteration."""
        return self.bytes_per_iteration / self.iteration_time_n_s

    @property
    def utilization(self) -> Optional[float]:
        """Network throughput over the link rate (None without a link rate)."""
        return None if self.link_rate is None else self.network_throughput / self.link_rate

    @property
    def ideal_comm_s(self) -> Optional[float]:
        """Time the bytes of one iteration take at the full link rate, seconds."""
        return None if self.link_rate is None else self.bytes_per_iteration / self.link_rate

    def to_dict(self) -> dict[str, Any]:
        """Fields and derived numbers, JSON-ready."""
        d = dataclasses.asdict(self)
        for k in (
            "throughput_1",
            "throughput_n",
            "scaling_factor",
            "network_throughput",
            "utilization",
            "ideal_comm_s",
        ):
            d[k] = getattr(self, k)
        return d


def _loopback(interface: str) -> bool:
    """Whether ``interface`` is a loopback device (IFF_LOOPBACK in its flags)."""
    try:
        return bool(int(Path(f"/sys/class/net/{interface}/flags").read_text(), 16) & 0x8)
    except (OSError, ValueError):
        return False


def _counters(interface: Optional[str]) -> tuple[int, int]:
    if interface is None:
        return 0, 0
    base = Path(f"/sys/class/net/{interface}/statistics")
    return int((base / "tx_bytes").read_text()), int((base / "rx_bytes").read_text())


def build(job: Job) -> tuple[Any, Any]:
    """The job's module and a batch of random inputs (same module on every rank)."""
    import torch

    torch.manual_seed(job.seed)
    if job.model.startswith("zoo:"):
        from tensorwire.torch.emulate import emulated
        from tensorwire.workloads import load_model

        zoo = emulated(load_model(job.model[4:]), size_scale=job.size_scale, time_scale=job.time_scale)
        return zoo, torch.randn(job.batch, 16)
    from tensorwire.torch.profiling import INPUT_SHAPES, load_module, materialize

    module, name = load_module(job.model)
    shape = job.input_shape or INPUT_SHAPES.get(name, (3, 224, 224))
    x = torch.randn(job.batch, *shape)
    # Lazy modules (nn.LazyLinear, ...) get their parameters from a first forward pass on
    # the job's input: the same on every rank (same seed, same input), before the optimizer.
    materialize(module, (x,), job.model, shape, job.batch)
    return module, x


def check_job(job: Job) -> None:
    """Builds the job's model and runs one forward pass here, before any process starts: a
    model that does not exist, scales out of range or inputs the model rejects are an
    :class:`InputError` (one line), not a traceback from inside a worker process."""
    import torch

    from tensorwire.torch.profiling import rejected_inputs

    check_model_memory(job, 1, _available_bytes())
    module, x = build(job)
    try:
        with torch.no_grad():
            module(x)
    except (RuntimeError, ValueError) as e:  # ValueError: BatchNorm on one value per channel
        raise rejected_inputs(job.model, x.shape[1:], job.batch, e) from None


#: Copies of a model's parameters one process of ``measure`` holds at its peak: the
#: parameters, their gradients and SGD's momentum. Measured: 3.1x the gradient bytes above
#: a process's baseline for zoo:vgg16 at size_scale 1 (553 MB of gradients; 1 and 2
#: processes, fifo and priority). DDP holds its gradient buckets besides: one copy more
#: (4.1x measured, zoo:vgg16 at size_scale 0.5 on 2 processes).
MODEL_COPIES = 3
DDP_MODEL_COPIES = 4


def zoo_model_bytes(job: Job) -> Optional[int]:
    """Bytes of a ``zoo:`` job's emulated parameters at its ``size_scale``, from the zoo's
    tensor sizes and without building anything; None for other models (their size is
    known only once built, and a torchvision model's is bounded)."""
    if not job.model.startswith("zoo:"):
        return None
    from tensorwire.torch.emulate import emulated_bytes
    from tensorwire.workloads import load_model

    return emulated_bytes(load_model(job.model[4:]), job.size_scale)


def _floor_3_digits(x: float) -> float:
    """``x`` rounded down to 3 significant digits (a limit that still fits).

    >>> _floor_3_digits(6.99961), _floor_3_digits(0.012345)
    (6.99, 0.0123)
    """
    if x <= 0:
        return 0.0
    step = 10.0 ** (math.floor(math.log10(x)) - 2)
    return round(math.floor(x / step) * step, 12)


def check_model_memory(job: Job, workers: int, available: Optional[int]) -> None:
    """Refuses a ``zoo:`` job whose emulated model cannot fit ``workers`` processes into
    ``available`` bytes, naming ``size_scale``, before anything is built: ``measure
    --model zoo:vgg16 --size-scale 50`` built a 25.8 GiB model in the parent to check it and
    was killed for memory (24 GiB machine) before the memory check after the 1-process run
    (:func:`check_memory`) was reached. Counts :data:`MODEL_COPIES` copies a process.

    >>> check_model_memory(Job(model="zoo:alexnet", size_scale=0.01), 2, 8 * 2**30)
    """
    size = zoo_model_bytes(job)
    if size is None or available is None or size <= 0:
        return
    copies = DDP_MODEL_COPIES if job.mode == "ddp" else MODEL_COPIES
    need = workers * copies * size
    if need <= available:
        return
    what = "parameters, gradients, momentum" + (", DDP's buckets" if job.mode == "ddp" else "")
    fits = _floor_3_digits(job.size_scale * available / need)
    raise InputError(
        "size_scale",
        f"{job.size_scale:g} makes {job.model}'s parameters {format_bytes(size)}; {workers} process"
        f"{'es' if workers > 1 else ''} holding {copies} copies each ({what}) need about {format_bytes(need)} "
        f"and this machine has {format_bytes(available)} available; give a size_scale of at most {fits:g}"
        + (" (or fewer processes)" if workers > 1 else ""),
    )


def run_job(rank: int, world: int, job: Job) -> dict[str, Any]:
    """Trains ``job`` on this process (of ``world``) and times it; for :func:`run_local` or torchrun."""
    import torch

    from tensorwire.torch.profiling import training_loss

    module, x = build(job)
    x = x + 0.01 * rank  # each worker its own data
    opt = torch.optim.SGD(module.parameters(), lr=1e-3, momentum=0.9)
    model: Any = module
    sdp = None
    if world > 1 and job.mode == "ddp":
        ddp = torch.nn.parallel.DistributedDataParallel
        model = ddp(module) if job.bucket_cap_mb is None else ddp(module, bucket_cap_mb=job.bucket_cap_mb)
    elif world > 1:
        from tensorwire.torch.data_parallel import ScheduledDataParallel
        from tensorwire.torch.tuning import AutoTune

        tune = (
            AutoTune(
                partition=("64KiB", "16MiB"),
                credit_factor=(1, 8),
                trials=job.autotune_trials,
                steps_per_trial=2,
                warmup_steps=1,
            )
            if job.autotune_trials
            else None
        )
        sdp = model = ScheduledDataParallel(
            module,
            opt,
            job.mode,
            job.partition,
            job.credit,
            job.fusion_bytes,
            job.fusion_cycle_s,
            timeout_s=job.timeout_s,
            autotune=tune,
        )

    def one() -> None:
        opt.zero_grad()
        training_loss(model(x)).backward()  # type: ignore[no-untyped-call]
        opt.step()

    for _ in range(job.warmup + 4 * job.autotune_trials):
        one()
    if sdp is not None:
        sdp.synchronize()
    if world > 1:
        torch.distributed.barrier()
    tx0, rx0 = _counters(job.interface)
    t0 = time.perf_counter()
    marks = [t0]
    for _ in range(job.iterations):
        one()
        marks.append(time.perf_counter())
    if sdp is not None:
        sdp.synchronize()
    end = time.perf_counter()
    tx1, rx1 = _counters(job.interface)
    times = iteration_times(marks, end)
    groups = sdp.groups_started if sdp is not None else 0
    final = sdp.config_history[-1] if sdp is not None and sdp.config_history else None
    trials = (
        [(t.partition_bytes, t.credit_bytes, t.iteration_time_s) for t in sdp.tuning_trials] if sdp is not None else []
    )
    if sdp is not None:
        sdp.close()
    grad_bytes = sum(p.numel() * p.element_size() for p in module.parameters() if p.requires_grad)
    # Every sample holds one iteration's communication (see iteration_times); the median
    # keeps a stray stall out once there are 3 or more, and is their mean below that.
    return {
        "iteration_time_s": statistics.median(times),
        "mean_iteration_time_s": (end - t0) / job.iterations,
        "iteration_times_s": times,
        "groups_started": groups,
        "config": None
        if final is None
        else {"partition_bytes": final.partition_bytes, "credit_bytes": final.credit_bytes},
        "tuning_trials": trials,
        "gradient_bytes": grad_bytes,
        "tx_bytes_per_iteration": (tx1 - tx0) / job.iterations,
        "rx_bytes_per_iteration": (rx1 - rx0) / job.iterations,
        "private_bytes": _private_bytes(),
    }


def iteration_times(marks: Sequence[float], end: float) -> list[float]:
    """Per-iteration times, seconds, each holding one iteration's communication, from the
    times ``marks`` (``time.perf_counter`` seconds) of the timed loop's start and of each
    ``step()`` return after it, and ``end``, when the final ``synchronize()`` returned.

    ``step()`` does not wait for communication: the spacing of two ``step()`` calls is an
    iteration's compute plus its forward pass's waits for the *previous* iteration's
    gradients. The first timed iteration starts right after a ``synchronize()``, so its
    spacing holds no communication, and the last iteration's communication is drained only
    by the final ``synchronize()``. Both are one sample here: the first spacing plus that
    drain, i.e. one iteration's compute and one iteration's communication with nothing of
    it overlapped (so at least a steady-state iteration). The samples add up to
    ``end - marks[0]``, and each holds exactly one iteration's communication, so a run that
    communicates cannot come out faster than its compute alone, for any iteration count.
    Timing ``step()`` spacings alone put one iteration of zoo:vgg16 (fifo, 2 processes) at
    0.475 s, its compute, where it took 1.048 s with its communication, and ``measure
    --iterations 1`` scored it 1.22 (1.005 in a quiet run; 0.35 with these samples).

    >>> iteration_times([0.0, 1.0, 3.0], 3.5)   # 2 iterations; the drain joins the first
    [1.5, 2.0]
    >>> iteration_times([0.0, 0.5], 1.2)        # 1 iteration: the whole span
    [1.2]
    """
    if len(marks) < 2 or end < marks[-1]:
        raise ValueError("need the loop's start, one mark per iteration, and an end no earlier than the last")
    steps = [b - a for a, b in zip(marks, marks[1:])]
    return [steps[0] + (end - marks[-1]), *steps[1:]]


def _private_bytes() -> Optional[int]:
    """Memory this process holds that no other does, bytes (``Private_Clean`` +
    ``Private_Dirty`` of /proc/self/smaps_rollup): what one more process of the same job
    needs, where torch's pages are shared from the fork server. None off Linux."""
    try:
        with open("/proc/self/smaps_rollup", encoding="ascii", errors="replace") as f:
            fields = dict(line.split(":", 1) for line in f if ":" in line)
        return sum(int(fields[k].split()[0]) * 1024 for k in ("Private_Clean", "Private_Dirty"))
    except (OSError, KeyError, ValueError, IndexError):
        return None


def _available_bytes() -> Optional[int]:
    """``MemAvailable`` of /proc/meminfo, bytes; None off Linux."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def check_memory(per_process: Optional[int], workers: int, available: Optional[int]) -> None:
    """Refuses ``workers`` processes that need more than the machine's available memory,
    from what one process of the job held on its own (measured on the 1-process run):
    ``measure -n 256`` of ResNet-50 would have needed about 250 GB on a 24 GiB machine.

    >>> check_memory(10**9, 4, 8 * 10**9)
    """
    if per_process is None or available is None or per_process <= 0:
        return
    need = per_process * workers
    if need > available:
        fits = available // per_process
        advice = f"give at most {fits}" if fits >= 2 else "fewer than 2 fit"
        raise InputError(
            "workers",
            f"{workers} processes need about {format_bytes(need)} ({format_bytes(per_process)} each, as the "
            f"1-process run held on its own) and this machine has {format_bytes(available)} available; {advice}",
        )


def measure(
    job: Job,
    workers: int = 2,
    *,
    link_rate: Union[float, str, None] = None,
    threads: Optional[int] = 1,
    timeout_s: float = 600.0,
) -> Measurement:
    """Times ``job`` on 1 process and on ``workers`` processes (Gloo on 127.0.0.1).

    ``link_rate``: the network's rate per host (bytes/s or text such as ``"10Gbps"``) for the
    utilisation; ``threads``: torch threads per process (1 keeps processes from competing
    for cores).
    """
    from tensorwire.torch.launch import run_local

    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 2:
        raise InputError("workers", f"{workers!r} must be an integer >= 2")
    rate = to_rate(link_rate, "link_rate") if link_rate is not None else None
    if job.interface is not None and not _loopback(job.interface):
        raise InputError(
            "interface",
            f"{job.interface} carries none of these processes' bytes: they talk over 127.0.0.1; give lo (the "
            "bytes of all of them, divided by their number), or count on a testbed host's interface under torchrun",
        )
    check_model_memory(job, workers, _available_bytes())
    check_job(job)
    one = run_local(run_job, 1, job, timeout_s=timeout_s, threads=threads)[0]
    check_memory(one.get("private_bytes"), workers, _available_bytes())
    many = run_local(run_job, workers, job, timeout_s=timeout_s, threads=threads, pg_timeout_s=job.timeout_s)[0]
    grad = int(many["gradient_bytes"])
    if job.interface is not None:
        # Every process of this machine sends through the one loopback: rank 0 read all of it.
        sent = float(many["tx_bytes_per_iteration"]) / workers
        where = f"interface {job.interface} (tx of all {workers} processes / {workers})"
    else:
        sent, where = 2 * (workers - 1) / workers * grad, "ring all-reduce estimate 2(N-1)/N x gradient bytes"
    return Measurement(
        model=job.model,
        mode=job.mode,
        workers=workers,
        batch_size=job.batch,
        iteration_time_1_s=float(one["iteration_time_s"]),
        iteration_time_n_s=float(many["iteration_time_s"]),
        gradient_bytes=grad,
        bytes_per_iteration=sent,
        bytes_counted_on=where,
        link_rate=rate,
    )


def job_from_json(text: str) -> Job:
    """A :class:`Job` from its JSON form (``dataclasses.asdict``), e.g. for another process."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError("job", f"not valid JSON: {e.msg}") from None
    if not isinstance(data, dict):
        raise InputError("job", "must be a JSON object of Job fields")
    unknown = set(data) - {f.name for f in dataclasses.fields(Job)}
    if unknown:
        raise InputError("job", f"unknown fields {sorted(unknown)}")
    if data.get("input_shape") is not None:
        data["input_shape"] = tuple(data["input_shape"])
    return Job(**data)


def _torchrun_main(argv: list[str]) -> int:
    """One worker under torchrun: ``python -m tensorwire.torch.measuring --job '{"model": "resnet50"}'``.

    A refused job is one line on stderr, ``tensorwire: error: FIELD: MESSAGE``, and exit
    status 2 (as the ``tensorwire`` command), not a traceback from every rank: a job
    refused before the process group is joined (its JSON, its fields, its memory) is the
    same on every rank, so only each host's first process (``LOCAL_RANK`` 0) prints it;
    one refused after that is printed by each rank that raised it, naming the rank.
    """
    import argparse

    from tensorwire.torch.launch import init_process_group

    ap = argparse.ArgumentParser(prog="python -m tensorwire.torch.measuring")
    ap.add_argument("--job", default="{}", help='Job fields as JSON, e.g. \'{"model": "zoo:vgg16", "mode": "fifo"}\'')
    ap.add_argument("--threads", type=int, default=None, help="torch intra-op threads")
    a = ap.parse_args(argv)
    try:
        job = job_from_json(a.job)
        # This host runs LOCAL_WORLD_SIZE workers of the job (torchrun sets it).
        local = os.environ.get("LOCAL_WORLD_SIZE", "1")
        check_model_memory(job, int(local) if local.isdigit() and int(local) > 0 else 1, _available_bytes())
        if a.threads is not None:
            import torch

            torch.set_num_threads(a.threads)
        rank, world = init_process_group("gloo", timeout_s=job.timeout_s)
        out = run_job(rank, world, job)
    except InputError as e:
        return _refused(e)
    if rank == 0:
        print(json.dumps({"world": world, **out}), flush=True)
    return 0


def _refused(e: InputError) -> int:
    """Prints ``e`` as one line on stderr (see :func:`_torchrun_main` for which ranks do) and
    returns the exit status 2."""
    field, message = e.args if len(e.args) == 2 else ("input", str(e))
    import torch.distributed as dist

    joined = dist.is_available() and dist.is_initialized()
    if joined:
        print(f"tensorwire: error: rank {dist.get_rank()}: {field}: {message}", file=sys.stderr, flush=True)
    elif os.environ.get("LOCAL_RANK", "0") == "0":
        print(f"tensorwire: error: {field}: {message}", file=sys.stderr, flush=True)
    return 2


if __name__ == "__main__":
    if "RANK" not in os.environ:
        sys.exit("run this module under torchrun; for a local measurement use `tensorwire measure`")
    sys.exit(_torchrun_main(sys.argv[1:]))


__all__ = [
    "JOB_MODES",
    "Job",
    "Measurement",
    "build",
    "check_job",
    "check_model_memory",
    "iteration_times",
    "job_from_json",
    "measure",
    "run_job",
]
