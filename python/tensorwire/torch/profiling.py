"""``profile``: run a real PyTorch model and write what the network sees as a workload.

A *layer* is a module that owns parameters directly (``Conv2d``, ``Linear``, ``BatchNorm``,
...). For each training iteration (random inputs, no downloads) the profiler records:

- forward: the time from the end of the previous layer's forward to the end of this
  layer's, so parameter-free modules in between (activations, pooling) are charged to the
  next layer and the layers' times add up to the whole forward pass;
- backward: the moment each parameter's gradient is accumulated (a post-accumulate-grad
  hook); a layer's gradient-ready time is that of its last parameter, and its ``backward_s``
  is the gap since the gradients of the layers after it were ready (the layer nearest the
  output: since ``backward()`` began). Gaps are taken against the latest ready time of any
  later layer and clamped at zero, so ready times are monotone in reverse layer order, as
  the workload format assumes.

The median over ``iterations`` (after ``warmup``) is kept. On CUDA the time points are
CUDA events in the stream, read after each iteration, so the hooks do not stop the host and
kernels queue as in training (:class:`_Clock`). Tensors are the
layers' trainable parameters (bytes = elements x element size), in ``parameters()`` order
within each layer; layers in first-forward order. ``tensorwire simulate --workload FILE``
reads the file.
"""

from __future__ import annotations

import collections
import importlib
import inspect
import platform
import statistics
import time
from typing import Any, Callable, Optional, Sequence, Union

import torch

from tensorwire._core import InputError
from tensorwire.torch.shapes import check_input_shape
from tensorwire.workload import Layer, Tensor, Workload

#: Input (channels, height, width) of torchvision models that need another than 3x224x224.
INPUT_SHAPES = {"inception_v3": (3, 299, 299)}


def torchvision_models() -> list[str]:
    """Names of torchvision's classification models (``resnet50``, ``vgg16``, ...)."""
    try:
        import torchvision  # type: ignore[import-untyped]
    except ModuleNotFoundError as e:
        if e.name != "torchvision":
            raise InputError("model", f"torchvision could not be imported: {e}") from None
        raise InputError("model", "torchvision is not installed: pip install 'tensorwire[torch]'") from None
    except ImportError as e:  # installed, but failed to load (a broken install, no resources)
        raise InputError("model", f"torchvision could not be imported: {e}") from None
    return sorted(torchvision.models.list_models(module=torchvision.models))


#: What ``model`` may be, for the errors that refuse it.
_MODELS = (
    "give a torchvision model name (resnet50, vgg16, ...) or package.module:factory, "
    "a callable that builds a torch.nn.Module with no arguments"
)


def _no_arguments(factory: Any) -> Optional[str]:
    """Why ``factory`` cannot be called with no arguments, or None if it can (or its
    signature is unknown)."""
    if not callable(factory):
        return f"is a {type(factory).__name__}, not callable"
    try:
        inspect.signature(factory).bind()
    except TypeError as e:
        return f"needs arguments ({e})"
    except ValueError:
        pass  # no signature (some builtins): call it and see
    return None


def load_module(spec: str) -> tuple[torch.nn.Module, str]:
    """A torchvision model by name (random weights), or ``package.module:factory`` called
    with no arguments. Returns the module and a name for the workload."""
    if ":" in spec:
        mod_name, _, attr = spec.partition(":")
        try:
            factory = getattr(importlib.import_module(mod_name), attr)
        except (ImportError, AttributeError, ValueError) as e:  # ValueError: ":foo", an empty module name
            raise InputError("model", f"cannot load {spec!r}: {e}") from None
        why = _no_arguments(factory)
        if why is not None:
            raise InputError("model", f"{spec!r} {why}; {_MODELS}")
        try:
            module = factory()
        except Exception as e:  # the user's code: whatever it raises is its failure, in one line
            raise InputError("model", f"{spec!r} raised {type(e).__name__}: {e}") from None
        if not isinstance(module, torch.nn.Module):
            raise InputError("model", f"{spec!r} returned {type(module).__name__}, not a torch.nn.Module; {_MODELS}")
        return module, attr
    names = torchvision_models()
    if spec not in names:
        close = [n for n in names if spec.lower() in n][:6]
        hint = f"; did you mean {', '.join(close)}?" if close else "; see torchvision.models.list_models()"
        raise InputError("model", f"{spec!r} is not a torchvision classification model{hint}")
    import torchvision

    return torchvision.models.get_model(spec, weights=None), spec


def rejected_inputs(model: str, shape: Sequence[int], batch: int, error: Exception) -> InputError:
    """The one-line refusal of inputs ``model`` rejected (its error's first line), naming
    ``input_shape``: for ``profile`` and ``measure``, which run a forward pass to find out."""
    reason = next((line.strip() for line in str(error).splitlines() if line.strip()), type(error).__name__)
    return InputError(
        "input_shape", f"{model} rejected inputs of shape {'x'.join(map(str, shape))} (batch {batch}): {reason}"
    )


def has_lazy_parameters(module: torch.nn.Module) -> bool:
    """Whether ``module`` holds parameters a lazy module (``nn.LazyLinear``, ...) has not
    shaped yet: they have no size until a first forward pass."""
    return any(torch.nn.parameter.is_lazy(p) for p in module.parameters())


def materialize(
    module: torch.nn.Module, args: tuple[Any, ...], model: str, shape: Optional[Sequence[int]], batch: int
) -> None:
    """Runs one forward pass of ``module`` on ``args`` (without gradients) when it has lazy
    parameters, so that they get their shapes and values before hooks, optimizers or a
    data-parallel wrapper touch them: ``profile`` and ``measure`` know the input shape,
    and an uninitialised parameter was a traceback there ("Attempted to use an
    uninitialized parameter"). Inputs of ``shape`` the model rejects are
    :func:`rejected_inputs` (``model``, ``shape`` and ``batch`` name them); with ``shape``
    None (inputs the caller made) its error is raised as it is. Nothing happens without
    lazy parameters.
    """
    if not has_lazy_parameters(module):
        return
    try:
        with torch.no_grad():
            module(*args)
    except (RuntimeError, ValueError) as e:  # ValueError: BatchNorm on one value per channel
        if shape is None or isinstance(e, torch.cuda.OutOfMemoryError):
            raise
        raise rejected_inputs(model, shape, batch, e) from None
    if has_lazy_parameters(module):
        raise InputError("model", f"{model} still has uninitialised (lazy) parameters after a forward pass")


def _first_tensor(out: Any) -> torch.Tensor:
    if isinstance(out, torch.Tensor):
        return out
    if isinstance(out, dict):
        out = list(out.values())
    if isinstance(out, (list, tuple)):
        for o in out:
            if isinstance(o, torch.Tensor):
                return o
    raise InputError("model", f"its forward returned {type(out).__name__}; need a tensor (or a tuple/dict holding one)")


class _Clock:
    """Time points of one iteration: the host's clock on CPU; on CUDA, events recorded in
    the current stream, read once the iteration is over. Events do not stop the host, so
    kernels queue ahead of the GPU as they do in training: synchronising the device at every
    hook instead exposed each kernel's launch and put ResNet-50's layers (batch 64, H100) at
    1.59x an unhooked iteration, VGG-16's at 1.15x; with events 1.00-1.03x and 1.00x
    (docs/benchmarks.md, "On a GPU")."""

    def __init__(self, dev: torch.device) -> None:
        self.cuda = dev.type == "cuda"

    def now(self) -> Any:
        if not self.cuda:
            return time.perf_counter()
        event = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        event.record()
        return event

    def settle(self) -> None:
        """Waits for the device (CUDA): every point recorded so far can be read."""
        if self.cuda:
            torch.cuda.synchronize()

    def seconds(self, a: Any, b: Any) -> float:
        """Seconds from point ``a`` to point ``b`` (after :meth:`settle`)."""
        return float(a.elapsed_time(b)) / 1e3 if self.cuda else float(b - a)


def training_loss(out: Any) -> torch.Tensor:
    """Cross-entropy against random labels for (batch, classes) outputs, else the mean."""
    y = _first_tensor(out)
    if y.dim() == 2 and y.shape[1] > 1 and y.is_floating_point():
        target = torch.randint(0, y.shape[1], (y.shape[0],), device=y.device)
        return torch.nn.functional.cross_entropy(y.float(), target)
    return y.float().mean()


def profile(
    model: Union[str, torch.nn.Module],
    *,
    batch_size: int = 32,
    input_shape: Optional[Sequence[int]] = None,
    inputs: Optional[Callable[[int], Any]] = None,
    iterations: int = 5,
    warmup: int = 2,
    device: Union[str, torch.device] = "cpu",
    name: Optional[str] = None,
) -> Workload:
    """Profiles ``model`` training on ``device`` and returns its :class:`~tensorwire.Workload`.

    ``model``: a torchvision model name, ``package.module:factory``, or a module.
    ``input_shape``: one sample's shape (default 3x224x224; 3x299x299 for inception_v3);
    ``inputs(batch_size)``: builds a batch instead (a tensor, or a tuple of positional
    arguments). Save it with ``Workload.save(path)``.
    """
    for field, v, least in (("batch_size", batch_size, 1), ("iterations", iterations, 1), ("warmup", warmup, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < least:
            raise InputError(field, f"{v!r} must be an integer >= {least}")
    if isinstance(model, str):
        module, default_name = load_module(model)
    elif isinstance(model, torch.nn.Module):
        module, default_name = model, type(model).__name__.lower()
    else:
        raise InputError("model", f"{type(model).__name__} is neither a model name nor a torch.nn.Module")
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as e:
        raise InputError("device", f"{device!r}: {e}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise InputError("device", "CUDA is not available on this machine")
    if dev.type == "meta":
        # Meta tensors have shapes but no data: nothing computes, the times would be Python's.
        raise InputError("device", "meta tensors do not compute; profile on cpu, cuda or cuda:N")
    try:
        torch.empty(1, device=dev)
    except (RuntimeError, AssertionError) as e:  # e.g. mps on a build without it
        raise InputError("device", f"{device!r} cannot be used here: {str(e).splitlines()[0]}") from None
    if input_shape is None:
        input_shape = INPUT_SHAPES.get(default_name, (3, 224, 224))
    shape = check_input_shape(tuple(int(s) for s in input_shape), repr(tuple(input_shape)))
    module = module.to(dev).train()
    make_inputs = inputs or (lambda b: torch.randn((b, *shape), device=dev))
    if has_lazy_parameters(module):  # shaped by a first forward pass, before the hooks below
        first = make_inputs(batch_size)
        args0 = first if isinstance(first, tuple) else (first,)
        materialize(module, args0, default_name, None if inputs is not None else shape, batch_size)

    # Layers and their trainable tensors.
    # A parameter shared by several modules (tied weights) is one gradient, all-reduced once
    # (DDP's and ``parameters()``'s rule): it belongs to the first module that has it.
    layers: list[tuple[str, torch.nn.Module, list[tuple[str, torch.nn.Parameter]]]] = []
    seen: set[int] = set()
    for mname, m in module.named_modules():
        own = []
        for pn, p in m.named_parameters(recurse=False):
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                own.append((f"{mname}.{pn}" if mname else pn, p))
        if own:
            layers.append((mname or "(root)", m, own))
    if not layers:
        raise InputError("model", "has no trainable parameters")
    index = {m: i for i, (_, m, _) in enumerate(layers)}
    clock = _Clock(dev)

    order: list[int] = []
    fwd_marks: list[tuple[int, Any]] = []  # (layer, time point) at the end of each forward
    ready_marks: dict[int, Any] = {}  # layer -> time point of its last gradient

    def pre(m: torch.nn.Module, args: Any) -> None:
        i = index[m]
        if i not in order:
            order.append(i)

    def post(m: torch.nn.Module, args: Any, out: Any) -> None:
        fwd_marks.append((index[m], clock.now()))

    def grad_hook(i: int) -> Callable[[torch.Tensor], None]:
        def hook(p: torch.Tensor) -> None:
            # Hooks run in the order the gradients are made: the last one is the latest.
            ready_marks[i] = clock.now()

        return hook

    handles: list[Any] = []
    for i, (_, m, own) in enumerate(layers):
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
        for _, p in own:
            handles.append(p.register_post_accumulate_grad_hook(grad_hook(i)))  # type: ignore[no-untyped-call]

    samples_f: list[list[float]] = []
    samples_b: list[list[float]] = []
    try:
        for k in range(warmup + iterations):
            batch = make_inputs(batch_size)
            args = batch if isinstance(batch, tuple) else (batch,)
            module.zero_grad(set_to_none=True)
            fwd_marks.clear()
            ready_marks.clear()
            clock.settle()
            start_f = clock.now()
            try:
                out = module(*args)
            except (RuntimeError, ValueError) as e:  # ValueError: BatchNorm on one value per channel
                if k or inputs is not None or isinstance(e, torch.cuda.OutOfMemoryError):
                    raise
                raise rejected_inputs(default_name, shape, batch_size, e) from None
            loss = training_loss(out)
            start_b = clock.now()
            loss.backward()  # type: ignore[no-untyped-call]
            clock.settle()
            if k < warmup:
                continue
            fwd = [0.0] * len(layers)
            last = start_f
            for i, t in fwd_marks:
                fwd[i] += clock.seconds(last, t)
                last = t
            samples_f.append(fwd)
            ready = {i: clock.seconds(start_b, t) for i, t in ready_marks.items()}
            pos = order + [i for i in range(len(layers)) if i not in order]
            back = [0.0] * len(layers)
            latest = 0.0  # seconds since backward() began
            for i in reversed(pos):
                r = ready.get(i, latest)
                back[i] = max(0.0, r - latest)
                latest = max(latest, r)
            samples_b.append(back)
    finally:
        for h in handles:
            h.remove()
    pos = [i for i in range(len(layers)) if i not in order] + order  # never-called layers first: ready last
    out_layers = tuple(
        Layer(
            layers[i][0],
            statistics.median(s[i] for s in samples_f),
            statistics.median(s[i] for s in samples_b),
            tuple(Tensor(n, p.numel() * p.element_size()) for n, p in layers[i][2]),
        )
        for i in pos
    )
    where = (
        torch.cuda.get_device_name(dev)
        if dev.type == "cuda"
        else f"cpu ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"
    )
    # The parameters' element size (bf16: 2), as import-trace takes the gradients': the
    # tensors' bytes above are in it, and param_dtype/reduce_dtype rescale from it.
    sizes = collections.Counter(p.element_size() for p in module.parameters() if p.requires_grad)
    return Workload(
        name or default_name,
        batch_size,
        out_layers,
        dtype_bytes=sizes.most_common(1)[0][0] if sizes else 4,
        description=f"profiled by tensorwire on {where}: input {'x'.join(map(str, shape))}",
        sources=(
            f"tensorwire.torch.profiling: torch {torch.__version__}, median of {iterations} iterations after {warmup} warm-up",
        ),
    )


__all__ = ["has_lazy_parameters", "load_module", "materialize", "profile", "torchvision_models"]
