"""One nccl-tests log read, in either of the formats nccl-tests writes: its standard output
(:mod:`~tensorwire.calibrate.logs`) or the JSON of ``-J FILE.json``
(:mod:`~tensorwire.calibrate.json_results`), told apart by the text."""

from __future__ import annotations

from typing import Optional

from tensorwire.calibrate.json_results import is_json_object, parse_json
from tensorwire.calibrate.logs import Run, check_collective, parse_text, read_log


def parse_log(path: str, collective: Optional[str] = None) -> Run:
    """Reads one nccl-tests log at ``path``: a JSON object is ``-J``'s output
    (:func:`~tensorwire.calibrate.json_results.parse_json`), anything else the standard output
    (:func:`~tensorwire.calibrate.logs.parse_text`). ``collective`` (``allreduce``,
    ``allgather``, ``reducescatter``, ``alltoall``) is used where the log does not name its
    binary, and must agree with it where it does. Bad input raises ``InputError("log",
    "FILE:LINE: what is wrong")``."""
    check_collective(collective)
    text, digest = read_log(path)
    if is_json_object(text):
        return parse_json(path, text, digest, collective)
    return parse_text(path, text, digest, collective)
