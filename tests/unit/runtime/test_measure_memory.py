"""`measure`'s memory check: N processes refused up front where the 1-process run shows
they cannot fit (`measure -n 256` of ResNet-50 would have needed about 250 GB)."""

from __future__ import annotations

import sys

import pytest
from tensorwire import InputError
from tensorwire.torch import measuring


def test_processes_that_cannot_fit_are_refused_naming_how_many_do() -> None:
    measuring.check_memory(10**9, 4, 8 * 10**9)  # fits
    measuring.check_memory(None, 256, 10**9)  # nothing measured (off Linux): no refusal
    with pytest.raises(InputError) as e:
        measuring.check_memory(10**9, 256, 24 * 2**30)
    field, message = e.value.args
    assert field == "workers" and "256 processes need about 238.4 GiB" in message and "give at most 25" in message
    with pytest.raises(InputError, match="fewer than 2 fit"):
        measuring.check_memory(10**9, 2, 10**9)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux only)")
def test_this_process_private_memory_and_the_machines_available_memory_are_read() -> None:
    private, available = measuring._private_bytes(), measuring._available_bytes()
    assert private is not None and private > 0
    assert available is not None and available > 0
