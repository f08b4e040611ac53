"""Every relative link in README.md and docs/*.md reaches a file that exists and, with an #anchor,
a heading of that file (GitHub's anchors), so the README's move to docs/ left no dead link."""
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def anchor(heading):
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path):
    found, fence = set(), False
    for line in path.read_text(encoding="utf-8").split("\n"):
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{1,6} ", line):
            found.add(anchor(line.lstrip("#")))
    return found


def links(path):
    fence = False
    for number, line in enumerate(path.read_text(encoding="utf-8").split("\n"), 1):
        if line.startswith("```"):
            fence = not fence
            continue
        if fence:
            continue
        for target in re.findall(r"\]\(([^)\s]+)\)", line):
            if not target.startswith(("http://", "https://", "mailto:")):
                yield number, target


@pytest.mark.parametrize("document", DOCUMENTS, ids=[str(d.relative_to(ROOT)) for d in DOCUMENTS])
def test_relative_links_reach_a_file_and_a_heading(document):
    dead = []
    for number, target in links(document):
        file, _, fragment = target.partition("#")
        goal = (document.parent / file).resolve() if file else document
        if not goal.exists():
            dead.append(f"{document.name}:{number}: {target} (no such file)")
        elif fragment and goal.suffix == ".md" and fragment not in anchors(goal):
            dead.append(f"{document.name}:{number}: {target} (no such heading)")
    assert not dead, "\n".join(dead)
