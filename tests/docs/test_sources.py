"""User-facing text cites its sources by name: every "seed 00N" tag in the docs, in
``tensorwire strategies`` and in the strategy options' help sits beside the name
docs/sources.md gives it, and every tag used is in that table."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from tensorwire.cli import main

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "docs" / "sources.md"
TAG = re.compile(r"[Ss]eed (00\d)")


def _names() -> dict[str, str]:
    rows = re.findall(r"^\| seed (00\d) \| ([^|]+?) \|", SOURCES.read_text(), re.MULTILINE)
    return {n: name for n, name in rows}


def _uncited(line: str, names: dict[str, str]) -> list[str]:
    """Tags on ``line`` whose source is not named on it (case aside)."""
    return [n for n in TAG.findall(line) if n not in names or names[n].lower() not in line.lower()]


def test_sources_names_five_papers() -> None:
    assert _names() == {
        "000": "Chang et al. 2020",
        "001": "Zhang et al. 2020",
        "002": "Li et al. 2019",
        "003": "the MXNet multi-tree proposal",
        "004": "Guo 2019",
    }


def test_docs_cite_sources_by_name() -> None:
    names = _names()
    bad = []
    for doc in sorted([*(ROOT / "docs").glob("*.md"), ROOT / "README.md"]):
        for i, line in enumerate(doc.read_text().splitlines(), 1):
            # file names such as seed000_headline.png carry no space and are not citations
            if _uncited(line, names):
                bad.append(f"{doc.name}:{i}: {line.strip()[:100]}")
    assert not bad, "\n".join(bad)


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def test_strategy_summaries_and_option_help_cite_sources_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    names = _names()
    assert main(["strategies", "--json"]) == 0
    texts = _strings(json.loads(capsys.readouterr().out))
    assert any("AddEst" in t for t in texts)  # the host options are listed too
    bad = [t for t in texts if _uncited(t, names)]
    assert not bad, "\n".join(bad)
