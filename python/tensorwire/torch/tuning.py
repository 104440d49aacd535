"""Auto-tuning of partition and credit while training (Guo 2019, seed 004), with optuna.

The leader (rank 0 of the data-parallel group) runs a Bayesian optimisation (optuna's
TPE sampler, seeded) over the piece size and the credit, expressed as a multiple of the
piece size so every trial is sensible. Each trial's configuration is handed to the engine,
which switches at the start of the next iteration that begins with nothing in flight and
tells every follower in the same control stream as the groups (so every rank switches at
the same iteration; followers only ever execute the leader's decisions). The objective is
the median iteration time (seconds between consecutive ``optimizer.step()`` calls on the
leader) over ``steps_per_trial`` iterations after ``warmup_steps`` iterations of each
configuration. After ``trials`` trials the best configuration stays.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Any, Optional, Union

from tensorwire._core import InputError
from tensorwire.torch.tasks import to_bytes_option

Size = Union[int, str]


@dataclass(frozen=True)
class AutoTune:
    """What to tune and for how long; pass as ``ScheduledDataParallel(..., autotune=AutoTune())``.

    ``partition``: smallest and largest piece (bytes or text); ``credit_factor``: smallest
    and largest credit as a multiple of the piece. Tuning takes about
    ``trials * (warmup_steps + steps_per_trial + 1)`` iterations.

    >>> AutoTune(partition=("64KiB", "4MiB")).bounds()
    (65536, 4194304)
    """

    partition: tuple[Size, Size] = ("64KiB", "64MiB")
    credit_factor: tuple[int, int] = (1, 16)
    trials: int = 12
    steps_per_trial: int = 3
    warmup_steps: int = 1
    seed: int = 0

    def __post_init__(self) -> None:
        lo, hi = self.bounds()
        if lo > hi:
            raise InputError("autotune.partition", f"{self.partition!r}: the smallest must not exceed the largest")
        f_lo, f_hi = self.credit_factor
        for name, v in (("autotune.credit_factor", f_lo), ("autotune.credit_factor", f_hi)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(name, f"{self.credit_factor!r}: need integers >= 1")
        if f_lo > f_hi:
            raise InputError(
                "autotune.credit_factor", f"{self.credit_factor!r}: the smallest must not exceed the largest"
            )
        for name, v, least in (
            ("autotune.trials", self.trials, 1),
            ("autotune.steps_per_trial", self.steps_per_trial, 1),
            ("autotune.warmup_steps", self.warmup_steps, 0),
            ("autotune.seed", self.seed, 0),
        ):
            if isinstance(v, bool) or not isinstance(v, int) or v < least:
                raise InputError(name, f"{v!r} must be an integer >= {least}")

    def bounds(self) -> tuple[int, int]:
        """Smallest and largest piece, bytes."""
        lo = to_bytes_option(self.partition[0], "autotune.partition")
        hi = to_bytes_option(self.partition[1], "autotune.partition")
        assert lo is not None and hi is not None
        return lo, hi


@dataclass
class Trial:
    """One tried configuration and its median iteration time (seconds)."""

    partition_bytes: int
    credit_bytes: int
    iteration_time_s: Optional[float] = None
    samples_s: list[float] = field(default_factory=list)


class Tuner:
    """The leader's tuning state machine (no torch; optuna imported on first use)."""

    def __init__(self, spec: AutoTune, element_bytes: int = 1) -> None:
        try:
            import optuna
        except ImportError:
            raise InputError("autotune", "needs optuna: pip install 'tensorwire[torch]'") from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        self.spec = spec
        self._element_bytes = element_bytes
        startup = max(1, min(4, spec.trials // 3))
        self._study = optuna.create_study(
            direction="minimize", sampler=optuna.samplers.TPESampler(seed=spec.seed, n_startup_trials=startup)
        )
        lo, hi = spec.bounds()
        self._dists: dict[str, Any] = {
            "partition_bytes": optuna.distributions.IntDistribution(lo, hi, log=True),
            "credit_factor": optuna.distributions.IntDistribution(*spec.credit_factor, log=True),
        }
        self._current: Optional[Any] = None
        #: Every trial so far, in order.
        self.trials: list[Trial] = []
        self.best: Optional[Trial] = None
        self.done = False
        self._last_step_s: Optional[float] = None

    def _ask(self) -> tuple[int, int]:
        self._current = self._study.ask(self._dists)
        eb = self._element_bytes
        p = max(eb, int(self._current.params["partition_bytes"]) // eb * eb)
        c = p * int(self._current.params["credit_factor"])
        self.trials.append(Trial(p, c))
        return p, c

    def after_step(
        self, iteration: int, now_s: float, active: tuple[Optional[int], Optional[int], int]
    ) -> Optional[tuple[int, int]]:
        """Called by the leader after ``step()`` of ``iteration`` at time ``now_s`` (seconds).

        ``active`` is (partition, credit, first iteration) of the configuration in effect.
        Returns a (partition, credit) to switch to, or None.
        """
        dt = None if self._last_step_s is None else now_s - self._last_step_s
        self._last_step_s = now_s
        if self.done:
            return None
        if self._current is None:
            return self._ask()
        trial = self.trials[-1]
        part, credit, since = active
        in_effect = (part, credit) == (trial.partition_bytes, trial.credit_bytes)
        if dt is None or not in_effect or iteration < since + self.spec.warmup_steps:
            return None
        trial.samples_s.append(dt)
        if len(trial.samples_s) < self.spec.steps_per_trial:
            return None
        trial.iteration_time_s = statistics.median(trial.samples_s)
        self._study.tell(self._current, trial.iteration_time_s)
        if self.best is None or trial.iteration_time_s < (self.best.iteration_time_s or math.inf):
            self.best = trial
        if len(self.trials) < self.spec.trials:
            return self._ask()
        self.done = True
        assert self.best is not None
        return self.best.partition_bytes, self.best.credit_bytes


__all__ = ["AutoTune", "Trial", "Tuner"]
