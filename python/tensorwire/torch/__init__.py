"""The runtime: the core's scheduling policies on torch.distributed (Gloo on CPU, NCCL on GPU).

Sketch (run on every rank of a torchrun job)::

    import tensorwire.torch as twt
    twt.init_process_group()                             # torchrun's environment
    model = twt.ScheduledDataParallel(net, opt, strategy="ring:schedule=priority,partition=512KiB,credit=2MiB")
    for x, y in data:                                    # the loop stays as it is
        opt.zero_grad(); loss_fn(model(x), y).backward(); opt.step()
    model.synchronize()                                  # before evaluation or a checkpoint

Also: :func:`profile` (a real model -> a workload file for ``tensorwire simulate``),
:func:`measure` (scaling factor and network throughput on 1 and N processes), the task
API (:mod:`tensorwire.torch.tasks`), transports (:class:`AllReduce`,
:class:`ParameterServer`), partial collectives and eager-SGD (:class:`PartialAllreduce`,
:class:`EagerSGD`, Li et al. 2019 (seed 002); :mod:`tensorwire.torch.partial`) and the topology-aware
tree all-reduce (:class:`TreeAllReduce`, DDP's :func:`tree_allreduce_hook`; the
function :func:`tensorwire.torch.tree_allreduce.tree_allreduce` lives in its module,
whose name it shares). ``import tensorwire`` never imports torch; this package imports
it on first use of a name that needs it (``pip install 'tensorwire[torch]'``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tensorwire.lazy import lazy_exports

if TYPE_CHECKING:
    from tensorwire.torch.coordinator import CommunicationError, ConfigChange
    from tensorwire.torch.data_parallel import ScheduledDataParallel
    from tensorwire.torch.emulate import EmulatedModel, emulated
    from tensorwire.torch.launch import LocalRunError, init_process_group, run_local
    from tensorwire.torch.measuring import Job, Measurement, measure
    from tensorwire.torch.partial.collective import PartialAllreduce, PartialCollectiveError, PartialResult
    from tensorwire.torch.partial.eager import EagerSGD
    from tensorwire.torch.profiling import profile
    from tensorwire.torch.tasks import Group, SchedulerConfig, Task, TaskScheduler, partition
    from tensorwire.torch.transport import AllReduce, ParameterServer, Pending, Transport
    from tensorwire.torch.tree_allreduce import TreeAllReduce, TreeAllReduceState, tree_allreduce_hook
    from tensorwire.torch.tuning import AutoTune, Trial

_WHERE = {
    "ScheduledDataParallel": "data_parallel",
    "CommunicationError": "coordinator",
    "ConfigChange": "coordinator",
    "LocalRunError": "launch",
    "init_process_group": "launch",
    "run_local": "launch",
    "EmulatedModel": "emulate",
    "emulated": "emulate",
    "Job": "measuring",
    "Measurement": "measuring",
    "measure": "measuring",
    "profile": "profiling",
    "Group": "tasks",
    "SchedulerConfig": "tasks",
    "Task": "tasks",
    "TaskScheduler": "tasks",
    "partition": "tasks",
    "AllReduce": "transport",
    "ParameterServer": "transport",
    "Pending": "transport",
    "Transport": "transport",
    "AutoTune": "tuning",
    "Trial": "tuning",
    "PartialAllreduce": "partial.collective",
    "PartialCollectiveError": "partial.collective",
    "PartialResult": "partial.collective",
    "EagerSGD": "partial.eager",
    "TreeAllReduce": "tree_allreduce",
    "TreeAllReduceState": "tree_allreduce",
    "tree_allreduce_hook": "tree_allreduce",
}

__all__ = sorted(_WHERE)


#: A missing extra is named when a name is first used (``import tensorwire.torch`` never imports torch).
_EXTRAS = {"torch": "torch", "optuna": "torch", "torchvision": "torch"}
__getattr__, __dir__ = lazy_exports("tensorwire.torch", _WHERE, globals(), _EXTRAS)
