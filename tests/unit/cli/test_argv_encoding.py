"""Bytes that are not UTF-8 in any option's value give one line naming the option (they
reached the core as lone surrogates and ended in a UnicodeEncodeError traceback)."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "args,option",
    [
        ([b"simulate", b"-m", b"resnet50", b"-n", b"8", b"-b", b"25\xffGbps", b"-s", b"ring"], "-b"),
        ([b"simulate", b"-m", b"resnet50", b"-n", b"8", b"-b", b"25Gbps", b"--strategy=ring:\xc3("], "--strategy"),
        ([b"topology", b"--preset", b"\xed\xa0\x80"], "--preset"),
    ],
)
def test_bytes_that_are_not_utf8_name_their_option(args: list[bytes], option: str) -> None:
    p = subprocess.run([sys.executable.encode(), b"-m", b"tensorwire", *args], capture_output=True, timeout=60)
    err = p.stderr.decode("utf-8", "replace").strip().splitlines()
    assert p.returncode == 2 and err == [f"tensorwire: error: {option}: is not valid UTF-8 text"], p.stderr
