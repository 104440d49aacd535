"""Calibration from the user's own cluster: nccl-tests logs read (:mod:`.reading`: standard output, :mod:`.logs`, or JSON, :mod:`.json_results`), the fabric's
efficiencies and latencies fitted (:mod:`.fit`) against NCCL's model (:mod:`.predict`), and
cluster files for ``--cluster FILE`` (:mod:`.cluster_file`). docs/calibration.md."""

from tensorwire.calibrate.fit import Calibration, Fit, fit
from tensorwire.calibrate.logs import Row, Run
from tensorwire.calibrate.predict import Prediction, calibration_supported, nccl_predict
from tensorwire.calibrate.reading import parse_log

__all__ = [
    "Calibration",
    "Fit",
    "Prediction",
    "Row",
    "Run",
    "calibration_supported",
    "fit",
    "nccl_predict",
    "parse_log",
]
