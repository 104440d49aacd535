"""Type stub of the Rust extension ``tensorwire._core`` (checked by ``mypy.stubtest``)."""

from typing import Any, Callable, Optional, final

__version__: str

# The core's name lists and defaults (crates/tensorwire-py/src/catalog.rs).
NETWORK_MODELS: tuple[str, ...]
PLACEMENTS: tuple[str, ...]
COLLECTIVES: tuple[str, ...]
DTYPES: tuple[str, ...]
NODE_PRESETS: tuple[dict[str, Any], ...]
GPU_PRESETS: tuple[str, ...]
DEFAULT_ITERATIONS: int
DEFAULT_LATENCY_S: float

class InputError(ValueError):
    """Invalid input: ``InputError(field, message)``; ``field`` names the input (``args[0]``),
    ``message`` says what is allowed (``args[1]``)."""

    @property
    def field(self) -> str: ...
    @property
    def message(self) -> str: ...

#: (name, batch size, [(layer, forward s, backward s)], [(tensor, bytes, layer)], element
#: size in bytes, collective name): the whole workload, as ``collective`` returns it.
WorkloadTuple = tuple[str, int, list[tuple[str, float, float]], list[tuple[str, int, int]], int, str]

@final
class Workload:
    """The core's workload, converted and validated once (``tensorwire.Workload.core``)."""

    def __new__(
        cls,
        name: str,
        batch_size: int,
        layers: list[tuple[str, float, float]],
        tensors: list[tuple[str, int, int]],
        dtype_bytes: int,
        collective: str,
    ) -> Workload: ...
    @property
    def name(self) -> str: ...
    @property
    def batch_size(self) -> int: ...
    @property
    def dtype_bytes(self) -> int: ...
    @property
    def collective(self) -> str: ...
    @property
    def total_bytes(self) -> int: ...
    @property
    def compute_time_s(self) -> float: ...
    @property
    def layers(self) -> list[tuple[str, float, float]]: ...
    @property
    def tensors(self) -> list[tuple[str, int, int]]: ...

DEFAULT_MAX_FLOWS: int
#: A job of a multi-job run runs at most this many times the measured iterations.
BACKGROUND_FACTOR: int

@final
class Scenario:
    """One job's run as the core will simulate it, checked as far as the arguments go."""

    def __new__(
        cls,
        workload: Workload,
        workers: int,
        strategy: Strategy,
        bandwidth: float,
        latency: float,
        topology: Topology,
        network: str = "flow",
        iterations: int = 3,
        seed: int = 0,
        per_message_overhead: float = 0.0,
        copy_bandwidth: Optional[float] = None,
        stragglers: str = "none",
        spread: float = 0.0,
        slowdowns: Optional[list[float]] = None,
        placement: str = "packed",
        allow_folding: bool = True,
        max_flows: Optional[int] = None,
        failures: Optional[list[tuple[str, float, float]]] = None,
        allow_lanes: bool = True,
    ) -> Scenario: ...
    def check(self) -> None: ...
    def simulate(
        self, timeline: bool = False, progress: Optional[Callable[[int, int, float, int, int], bool]] = None
    ) -> Report: ...

def simulate_jobs(
    jobs: list[tuple[str, Workload, int, Strategy, Optional[list[int]]]],
    hosts: int,
    bandwidth: float,
    latency: float,
    topology: Topology,
    network: str = "flow",
    iterations: int = 3,
    seed: int = 0,
    per_message_overhead: float = 0.0,
    copy_bandwidth: Optional[float] = None,
    placement: str = "packed",
    failures: Optional[list[tuple[str, float, float]]] = None,
    max_flows: Optional[int] = None,
    allow_failures_after_end: bool = False,
) -> list[Report]: ...
def check(strategy: Strategy, topology: Topology, workers: int, network: str = "flow") -> None: ...

#: NCCL's choice for a collective: (collective, algorithm, protocol, channels, channels per
#: peer of an all-to-all or None).
PickTuple = tuple[str, str, str, int, Optional[int]]

#: (kind, host, to hosts, label, links, start s, end s, bytes, NCCL's choice of a timed
#: collective or None) of one recorded span.
SpanTuple = tuple[str, int, list[int], str, list[str], float, float, float, Optional[PickTuple]]

@final
class Report:
    """What one simulated job reports (the core's metrics.rs Report)."""

    @property
    def iteration_time_s(self) -> float: ...
    @property
    def completions_s(self) -> list[float]: ...
    @property
    def throughput_samples_per_s(self) -> float: ...
    @property
    def scaling_factor(self) -> float: ...
    @property
    def compute_time_s(self) -> float: ...
    @property
    def compute_interference_s(self) -> float: ...
    @property
    def background_stopped_s(self) -> Optional[float]: ...
    @property
    def comm_time_s(self) -> float: ...
    @property
    def exposed_comm_s(self) -> float: ...
    @property
    def gradient_bytes_per_worker(self) -> float: ...
    @property
    def sent_bytes_per_worker(self) -> float: ...
    @property
    def link_utilization(self) -> list[tuple[str, float]]: ...
    @property
    def events(self) -> int: ...
    @property
    def flows(self) -> int: ...
    @property
    def folded(self) -> bool: ...
    @property
    def simulated_ranks(self) -> int: ...
    @property
    def failures_applied(self) -> int: ...
    @property
    def failures_unreached(self) -> list[int]: ...
    @property
    def network_model(self) -> str: ...
    @property
    def nap(self) -> Optional[float]: ...
    @property
    def timeline(self) -> list[SpanTuple]: ...
    @property
    def nccl_choices(self) -> list[tuple[PickTuple, int, float, float, float, Optional[tuple[str, str]]]]: ...

@final
class Topology:
    """A topology spec parsed by the core."""

    def __new__(cls, spec: str) -> Topology: ...
    @property
    def spec(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def node(self) -> Optional[str]: ...
    @property
    def gpu_machines(self) -> bool: ...
    def host_rate(self, bandwidth: Optional[float] = None) -> float: ...
    def nic_past_its_path(self, nic_bytes_per_s: float) -> Optional[float]: ...

@final
class Strategy:
    """A strategy spec parsed by the core."""

    def __new__(cls, spec: str) -> Strategy: ...
    @property
    def spec(self) -> str: ...
    @property
    def name(self) -> str: ...
    @property
    def options(self) -> list[tuple[str, str]]: ...
    @property
    def family(self) -> str: ...
    def timed_by_nccl(self, topology: str) -> bool: ...
    @property
    def option_without_effect(self) -> Optional[tuple[str, str]]: ...
    @property
    def servers(self) -> int: ...
    @property
    def partition_bytes(self) -> Optional[int]: ...
    @property
    def policy(self) -> str: ...
    @property
    def credit_bytes(self) -> Optional[int]: ...
    @property
    def max_in_flight(self) -> Optional[int]: ...
    @property
    def fusion_bytes(self) -> Optional[int]: ...
    @property
    def fusion_cycle_s(self) -> Optional[float]: ...
    @property
    def stream(self) -> bool: ...
    @property
    def dispatch_s(self) -> float: ...
    @property
    def ps_settings(self) -> Optional[tuple[str, str, bool]]: ...
    def place_tensors(self, sizes: list[int]) -> list[int]: ...
    def ps_tasks(self, sizes: list[int], layers: list[int]) -> list[tuple[int, int, int, int, int, int]]: ...
    def ps_worker_round(self, server: int, workers: int) -> list[int]: ...
    def model_state_bytes(self, params: float, weight_bytes: float, topology: Topology, workers: int) -> float: ...
    def gathered_parameter_bytes(self, workload: Workload, topology: Topology, workers: int) -> float: ...

# Simulated time stays below this many seconds (2^53 ns; the core's limits.rs).
HORIZON_S: float
MAX_WORKERS: int
# Most layers (and tensors) of a workload (the core's limits.rs).
MAX_LAYERS: int
# Largest spread of normal:CV and lognormal:SIGMA stragglers.
MAX_SPREAD: float
# Most reduction trees a run or `topology --trees` holds.
MAX_TREES: int

def check_topology(spec: str) -> str: ...
def host_rate(topology: str, bandwidth: Optional[float] = None) -> float: ...

# The NCCL release whose behaviour the core's `nccl` model follows.
NCCL_VERSION: str

def nccl_predict(
    topology: str,
    gpus: int,
    collective: str,
    bytes: float,
    *,
    bandwidth: Optional[float] = None,
    transport: Optional[str] = None,  # None: the topology's transport=, else "rdma"
    algo: Optional[str] = None,
    proto: Optional[str] = None,
    channels: Optional[int] = None,
) -> dict[str, Any]: ...
def placement(topology: str, workers: int, kind: str, seed: int = 0) -> list[int]: ...
def place_jobs(
    topology: str,
    hosts: int,
    jobs: list[tuple[str, int, str, Optional[list[int]]]],
    kind: str = "packed",
    seed: int = 0,
) -> list[list[int]]: ...
def strategies() -> list[dict[str, Any]]: ...
def topologies() -> list[dict[str, Any]]: ...
def host_options() -> list[dict[str, Any]]: ...

#: (sends: [(to ranks, first chunk, end chunk)], receives: [(from, first chunk, end chunk, reduce)])
StepTuple = tuple[list[tuple[list[int], int, int]], list[tuple[int, int, int, bool]]]

def step_schedule(algorithm: str, n: int, rank: int, pipeline: int = 1) -> tuple[int, list[StepTuple]]: ...
def collective_schedule(algorithm: str, n: int, rank: int, pipeline: int = 1) -> tuple[int, list[StepTuple]]: ...
def activation_tree(rank: int, n: int, initiator: int) -> tuple[Optional[int], list[int]]: ...
def gpu_topology(
    preset: Optional[str] = None, adjacency: Optional[list[list[int]]] = None
) -> tuple[int, list[tuple[int, int, int]]]: ...
def gpu_trees(
    preset: Optional[str] = None, adjacency: Optional[list[list[int]]] = None, count: int = 1, penalty: float = 0.7
) -> list[tuple[int, list[tuple[int, int, int]], str, int]]: ...
def tree_allreduce_plan(
    elements: int,
    preset: Optional[str] = None,
    adjacency: Optional[list[list[int]]] = None,
    count: int = 0,
    penalty: float = 0.7,
    array_bound: int = 10_000_000,
) -> tuple[list[tuple[int, int]], list[list[tuple[int, int, int, bool]]]]: ...
def collective(spec: str) -> WorkloadTuple: ...
def parse_bytes(field: str, text: str) -> float: ...
def parse_rate(field: str, text: str) -> float: ...
def parse_duration(field: str, text: str) -> float: ...
def partition(
    sizes: list[int], layers: list[int], piece_bytes: Optional[int] = None
) -> list[tuple[int, int, int, int, int]]: ...

@final
class Scheduler:
    def __new__(
        cls,
        policy: str = "fifo",
        credit_bytes: Optional[int] = None,
        max_tasks: Optional[int] = None,
        fusion_bytes: Optional[int] = None,
        fusion_cycle_s: Optional[float] = None,
    ) -> "Scheduler": ...
    def notify_ready(self, iteration: int, task: int, layer: int, nbytes: int, now_s: float = 0.0) -> None: ...
    def poll(self, now_s: float = 0.0) -> list[list[tuple[int, int, int]]]: ...
    def next_deadline(self) -> Optional[float]: ...
    def notify_finish(self, nbytes: int) -> None: ...
    def waiting(self) -> int: ...
