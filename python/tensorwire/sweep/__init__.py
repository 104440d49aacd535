"""Sweeps: one simulation per point of a grid of models, workers, bandwidths, strategies and
what-ifs, run on local cores or a Ray cluster, written as CSV, JSON or Parquet.

>>> from tensorwire.sweep import run_grid
>>> rows = run_grid("resnet50", "8,16", "10Gbps", "ps,ring", jobs=1)
>>> [(r["workers"], r["strategy"]) for r in rows]
[(8, 'ps'), (8, 'ring'), (16, 'ps'), (16, 'ring')]
"""

from tensorwire.sweep.grid import Config, expand
from tensorwire.sweep.run import check_configs, run_configs, run_grid
from tensorwire.sweep.table import COLUMNS, Column, add_speedup, read_rows, write_rows

__all__ = [
    "COLUMNS",
    "Column",
    "Config",
    "add_speedup",
    "check_configs",
    "expand",
    "read_rows",
    "run_configs",
    "run_grid",
    "write_rows",
]
