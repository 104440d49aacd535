"""Models with emulated compute: real gradient tensors, compute replaced by sleeping.

For runtime benchmarks and measurements on machines with few cores (or no GPU): each layer
owns real parameters of the workload's sizes and a custom autograd function that sleeps
for the layer's forward time in the forward pass and for its backward time in the backward
pass (releasing the GIL and the CPU, as a GPU kernel would), then produces a gradient of the
parameter's shape. The network traffic is therefore exactly that of the real model, and the
timing that of the device the workload was measured on (times ``time_scale``).

>>> import tensorwire as tw
>>> m = emulated(tw.load_model("alexnet"), size_scale=0.001)   # doctest: +SKIP
"""

from __future__ import annotations

import math
import time
from typing import Any, Optional

import torch

from tensorwire._core import InputError
from tensorwire.torch.device_stream import DeviceStream
from tensorwire.workload import Workload

#: Time spent in a layer's forward pre-hooks that counts as waiting for data, seconds
#: (hooks that return at once take a few microseconds).
HOOK_WAIT_S = 0.0002


class _Sleep(torch.autograd.Function):
    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, *args: Any) -> torch.Tensor:
        *weights, layer = args
        ctx.layer = layer
        ctx.shapes = [w.shape for w in weights]
        if layer.forward_s > 0:
            layer.stream.run(layer.forward_s)
        return x.clone()

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        layer = ctx.layer
        if layer.backward_s > 0:
            layer.stream.run(layer.backward_s)
        value = float(grad.mean())
        return (grad, *(torch.full(s, value, dtype=grad.dtype) for s in ctx.shapes), None)


class EmulatedLayer(torch.nn.Module):
    """One layer: parameters of the given element counts; occupies ``stream`` for
    ``forward_s``/``backward_s`` seconds (a stream of its own unless one is given)."""

    def __init__(
        self, numels: list[int], forward_s: float, backward_s: float, stream: Optional[DeviceStream] = None
    ) -> None:
        super().__init__()
        self.weights = torch.nn.ParameterList([torch.nn.Parameter(torch.randn(n) * 0.01) for n in numels])
        self.forward_s = forward_s
        self.backward_s = backward_s
        self.stream = stream if stream is not None else DeviceStream()
        self._called_at = 0.0
        self.register_forward_pre_hook(self._note_call, prepend=True)

    def _note_call(self, module: torch.nn.Module, args: Any) -> None:
        self._called_at = time.perf_counter()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if time.perf_counter() - self._called_at > HOOK_WAIT_S:
            self.stream.waited()  # a pre-hook (registered after ours) blocked: data came late
        out: torch.Tensor = _Sleep.apply(x, *self.weights, self)
        return out


class EmulatedModel(torch.nn.Module):
    """A stack of :class:`EmulatedLayer` sharing one :class:`DeviceStream`; input: any float
    tensor (``(batch, 16)`` is plenty).

    A forward pre-hook that blocks before a layer (a data-parallel wrapper waiting for that
    layer's parameters) is detected by timing the layer's pre-hooks: more than
    :data:`HOOK_WAIT_S` counts as a wait, so the layer then starts when it gets to run.
    """

    def __init__(self, layers: list[EmulatedLayer]) -> None:
        super().__init__()
        self.stream = DeviceStream()
        for layer in layers:
            layer.stream = self.stream
        self.layers = torch.nn.ModuleList(layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x.detach().requires_grad_(True)  # so parameter-free layers' backward runs too
        for layer in self.layers:
            x = layer(x)
        return x


def emulated(workload: Workload, *, size_scale: float = 1.0, time_scale: float = 1.0) -> EmulatedModel:
    """An :class:`EmulatedModel` of ``workload`` (float32 tensors of ``bytes/4 * size_scale``
    elements, at least 1; compute times times ``time_scale``)."""
    _check_scale("size_scale", size_scale)
    _check_scale("time_scale", time_scale)
    layers = []
    for layer in workload.layers:
        numels = [_numel(t.bytes, size_scale) for t in layer.tensors]
        layers.append(EmulatedLayer(numels, layer.forward_s * time_scale, layer.backward_s * time_scale))
    return EmulatedModel(layers)


def _check_scale(field: str, value: float) -> None:
    """Refuses a scale that is not a finite number (> 0 for ``size_scale``, >= 0 for ``time_scale``)."""
    ok = value > 0 if field == "size_scale" else value >= 0
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or not ok:
        raise InputError(field, f"{value!r} must be a finite number {'> 0' if field == 'size_scale' else '>= 0'}")


def _numel(nbytes: int, size_scale: float) -> int:
    """Elements of the float32 tensor that stands for ``nbytes`` bytes times ``size_scale``."""
    return max(1, int(nbytes // 4 * size_scale))


def emulated_bytes(workload: Workload, size_scale: float = 1.0) -> int:
    """Bytes of the parameters :func:`emulated` would build for ``workload`` (float32),
    computed without building them: for memory checks before a large model is allocated."""
    _check_scale("size_scale", size_scale)
    return sum(4 * _numel(t.bytes, size_scale) for layer in workload.layers for t in layer.tensors)


__all__ = ["DeviceStream", "EmulatedLayer", "EmulatedModel", "emulated", "emulated_bytes"]
