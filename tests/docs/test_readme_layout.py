"""README.md's "Layout" names the folders that exist, and every package and test folder."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _layout() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Layout\n") :]
    return section[section.index("```\n") + 4 : section.index("```\n", section.index("```\n") + 4)]


def _named_folders() -> set[str]:
    """Paths of the folders the block names, joined to their parent line's folder."""
    named: set[str] = set()
    parent = ""
    for line in _layout().splitlines():
        if not line.strip() or line.startswith(" " * 20):
            continue  # a continuation of the description column
        head = line.split("  ")[0] if not line.startswith("  ") else line.strip().split("  ")[0]
        for word in re.findall(r"[\w./<>-]+/", head):
            path = word if not line.startswith("  ") else parent + word
            named.add(re.sub(r"/<\w+>", "", path.rstrip("/")))
        if not line.startswith("  "):
            parent = head.split()[0] if head.split()[0].endswith("/") else ""
    return named


def test_every_folder_named_exists() -> None:
    missing = [p for p in _named_folders() if not (ROOT / p).is_dir()]
    assert not missing


def test_every_subpackage_and_test_folder_is_named() -> None:
    named = _named_folders()
    packages = {
        f"python/tensorwire/{p.name}"
        for p in (ROOT / "python" / "tensorwire").iterdir()
        if (p / "__init__.py").exists()
    }
    test_dirs = {f"tests/{p.name}" for p in (ROOT / "tests").iterdir() if p.is_dir() and p.name != "__pycache__"}
    tracked = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    top = {line.split("/")[0] for line in tracked.splitlines() if "/" in line and not line.startswith(".")}
    assert packages <= named
    assert test_dirs <= named
    assert {t for t in top if t not in {"crates", "python", "tests"}} <= named
