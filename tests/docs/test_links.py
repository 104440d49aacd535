"""Every relative markdown link in README.md and docs/ names a file that exists, and its
#anchor names a heading of that file (GitHub's anchor rule)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md")])

#: [text](target), not images' alt text mistaken for it; targets without spaces
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _prose(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code removed."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(re.sub(r"`[^`]*`", "", line))
    return lines


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _headings_raw(path: Path) -> list[str]:
    # inline code must stay in headings for the anchor (its text counts, the backticks do not)
    out, fenced = [], False
    for line in path.read_text().splitlines():
        if FENCE.match(line):
            fenced = not fenced
        elif not fenced and re.match(r"^#{1,6}\s", line):
            out.append(line)
    return out


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _headings_raw(path):
        base = anchor(re.sub(r"^#{1,6}\s+", "", line).rstrip("# "))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(doc: Path, root: Path = ROOT) -> list[str]:
    bad = []
    for line in _prose(doc.read_text()):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            file_part, _, frag = target.partition("#")
            dest = doc if not file_part else (doc.parent / file_part).resolve()
            if not dest.exists():
                bad.append(f"{doc.relative_to(root)}: {target}: no such file")
            elif frag and dest.suffix == ".md" and frag not in _anchors(dest):
                bad.append(f"{doc.relative_to(root)}: {target}: no heading with that anchor")
    return bad


def test_anchor_rule() -> None:
    assert anchor("Sharded data parallelism (`zero1`, `zero2`, `fsdp`/`zero3`, `hsdp`)") == (
        "sharded-data-parallelism-zero1-zero2-fsdpzero3-hsdp"
    )
    assert anchor("Lanes: collectives whose messages have links of their own") == (
        "lanes-collectives-whose-messages-have-links-of-their-own"
    )


def test_the_check_finds_a_broken_link(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Here\n")
    doc = tmp_path / "b.md"
    doc.write_text("[ok](a.md#here) [gone](c.md) [bad](a.md#there) `[code](x.md)`\n")
    assert broken_links(doc, tmp_path) == [
        "b.md: c.md: no such file",
        "b.md: a.md#there: no heading with that anchor",
    ]


def test_relative_links_resolve() -> None:
    bad = [b for doc in DOCS for b in broken_links(doc)]
    assert not bad, "\n".join(bad)
