"""The fuzz tests' session summary: how many cases each test ran and how they ended.

Printed at the end of the session and written to the pytest cache
(``.pytest_cache/d/tensorwire-fuzz/``: ``counts.json``; ``failures.txt``, every failing
command; ``cases.jsonl``, every case with its outcome and first line of stderr), so that the counts can be quoted.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fuzz_harness  # noqa: E402


def _counts() -> dict[str, dict[str, int]]:
    counts: dict[str, Counter[str]] = {}
    for c in fuzz_harness.CASES:
        counts.setdefault(c.test, Counter())[c.outcome] += 1
    return {t: {"cases": sum(n.values()), **dict(sorted(n.items()))} for t, n in sorted(counts.items())}


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    if not fuzz_harness.CASES:
        return
    counts = _counts()
    total = Counter[str]()
    for n in counts.values():
        total.update({k: v for k, v in n.items()})
    tr = terminalreporter
    tr.section("tensorwire fuzz cases")
    for test, n in counts.items():
        tr.write_line(f"{test}: " + ", ".join(f"{k} {v}" for k, v in n.items()))
    tr.write_line("total: " + ", ".join(f"{k} {v}" for k, v in sorted(total.items())))
    if config.cache is not None:
        d = config.cache.mkdir("tensorwire-fuzz")
        (d / "counts.json").write_text(json.dumps({"tests": counts, "total": dict(total)}, indent=1) + "\n")
        with open(d / "cases.jsonl", "w", encoding="utf-8", errors="backslashreplace") as f:
            for c in fuzz_harness.CASES:
                row = {
                    "test": c.test,
                    "command": c.command,
                    "note": c.note,
                    "outcome": c.outcome,
                    "rc": c.rc,
                    "wall_s": round(c.wall_s, 2),
                    "problems": c.problems,
                    "stderr": c.first_stderr_line,
                }
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
        failing = [c for c in fuzz_harness.CASES if c.problems]
        (d / "failures.txt").write_text(fuzz_harness.report(failing) + "\n" if failing else "")
        tr.write_line(f"counts: {d / 'counts.json'}; failing commands: {d / 'failures.txt'}")
