"""The one-line error where the testbed cannot run (no root needed for these)."""

from __future__ import annotations

import os
import shutil

import pytest
from tensorwire.testbed import Testbed, TestbedUnavailable, netns


def test_not_root_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(TestbedUnavailable) as e:
        Testbed(hosts=2).start()
    assert "needs root" in str(e.value) and "\n" not in str(e.value)


def test_missing_tools_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    monkeypatch.setattr(shutil, "which", lambda tool: None)
    reason = netns.unavailable_reason()
    assert reason is not None and "iproute2" in reason
