"""Proof that benchmarks/README.md's record was moved into benchmarks/results/*.md verbatim.

Until session 24 benchmarks/README.md held every measured run (8,254 lines at main 1ed5b57);
it became a front page and its sections moved, by topic, into ``benchmarks/results/*.md``.
This checker compares the old file (read from git) with the topic files and reports every
difference that is not allowed. A *section* is a heading line (``##`` or deeper; the old
file's ``# Benchmarks`` title became the front page's) and the lines up to the next heading;
its trailing blank lines are not counted. Allowed: a heading's level, a relative link's target
(compared by what it points at — a file, or a file and the text of the heading its anchor
names), and in each topic file a title (``#``) and an introduction before its first moved
section. Not allowed: a line of the old file missing, changed, or moved out of its section;
a section in two files, or in none; a topic file whose old sections are not in the old file's
order. Sections measured after the split are written into the topic files: a topic section
that is no old section is listed as added (an old section edited shows as that one missing)::

    .venv/bin/python benchmarks/record_split.py [--base 1ed5b57]

prints the sections per topic file and those added, and exits 0, or prints each problem and
exits 1.
tests/test_record_split.py checks the checker on small texts and, where git has the base
commit, the real split.
"""

from __future__ import annotations

import argparse
import posixpath
import re
import subprocess
import sys
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OLD_PATH = "benchmarks/README.md"
RESULTS_DIR = "benchmarks/results"
#: The last commit whose benchmarks/README.md held the whole record (main, 2026-12-05 05:16 UTC).
BASE_COMMIT = "1ed5b57"

HEADING = re.compile(r"^(#{1,6}) +(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
LINK = re.compile(r"\]\(([^()\s]+)\)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def github_slug(heading_text: str) -> str:
    """The anchor GitHub gives a heading (before the ``-1``, ``-2`` of repeated ones).

    Lower case; inline link markup reduced to its text; every character that is not a
    letter, digit, ``_``, ``-`` or space dropped (backticks, dots, ``×``); spaces made ``-``.
    """
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading_text)
    text = re.sub(r"[^\w\- ]", "", text.lower())
    return text.replace(" ", "-")


def headings(text: str) -> list[tuple[int, int, str]]:
    """(line index, level, heading text) of each heading outside fenced code."""
    found = []
    fenced = False
    for index, line in enumerate(text.split("\n")):
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            found.append((index, len(match.group(1)), match.group(2)))
    return found


def anchors(text: str) -> dict[str, str]:
    """Anchor → heading text of every heading of a Markdown text, repeats numbered as GitHub."""
    seen: dict[str, int] = defaultdict(int)
    table = {}
    for _, _, title in headings(text):
        slug = github_slug(title)
        table[slug if seen[slug] == 0 else f"{slug}-{seen[slug]}"] = title
        seen[slug] += 1
    return table


@dataclass(frozen=True)
class Section:
    """A heading and its lines, as read from one file."""

    path: str  # repository-relative
    line: int  # 1-based line of the heading
    level: int
    lines: tuple[str, ...]  # the heading line first; no trailing blank lines


def sections(path: str, text: str, min_level: int = 2) -> tuple[list[str], list[Section]]:
    """The lines before the first heading of ``min_level`` or deeper, and the sections from it."""
    lines = text.split("\n")
    starts = [(i, level) for i, level, _ in headings(text) if level >= min_level]
    # a shallower heading after the first section ends the section before it
    cuts = sorted({i for i, _, _ in headings(text)} | {len(lines)})
    found = []
    for start, level in starts:
        end = next(c for c in cuts if c > start)
        body = lines[start:end]
        while body and not body[-1].strip():
            body.pop()
        found.append(Section(path, start + 1, level, tuple(body)))
    intro = lines[: starts[0][0]] if starts else lines
    return intro, found


def _link_target(source: str, target: str, record: dict[str, dict[str, str]]) -> str:
    """What a relative link points at: a repository path, and the heading text its anchor names.

    ``record`` maps a Markdown file of the record (repository path) to its anchors, so a link
    into the record is compared by heading text whatever file that heading now lives in.
    """
    path, _, anchor = target.partition("#")
    resolved = source
    if path:
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(source), path))
    if anchor and resolved in record:
        return "§" + record[resolved].get(anchor, f"<no heading #{anchor} in {resolved}>")
    return resolved + ("#" + anchor if anchor else "")


def normalised(section: Section, record: dict[str, dict[str, str]]) -> tuple[str, ...]:
    """A section's lines with its heading's level and its relative links' spelling taken out."""
    heading = HEADING.match(section.lines[0])
    assert heading, section
    out = [heading.group(2)]
    for line in section.lines[1:]:
        out.append(
            LINK.sub(
                lambda m: (
                    m.group(0)
                    if SCHEME.match(m.group(1))
                    else "](" + _link_target(section.path, m.group(1), record) + ")"
                ),
                line,
            )
        )
    return tuple(out)


@dataclass(frozen=True)
class Split:
    """What the comparison found: the differences not allowed, and the sections added since."""

    problems: tuple[str, ...]
    added: tuple[str, ...]  # "path:line: heading" of topic sections not in the old record


def check_split(old_text: str, topic_texts: dict[str, str]) -> Split:
    """Compare the old record with its topic files.

    ``topic_texts`` maps each topic file's repository path to its text. No problems when every
    section of the old file is in the topic files, once, whole, and in the old order within
    each file. A topic section that is in no old section is reported as added, not as a
    problem: the sections measured after the split are written into the topic files, and an old
    section edited shows as that old section missing.
    """
    record = {OLD_PATH: anchors(old_text)} | {p: anchors(t) for p, t in topic_texts.items()}
    old_intro, old_sections = sections(OLD_PATH, old_text)
    by_content: dict[tuple[str, ...], list[int]] = defaultdict(list)
    for index, section in enumerate(old_sections):
        by_content[normalised(section, record)].append(index)
    problems = [
        f"{OLD_PATH}:{i + 1}: {line!r} is before the first section and is not the title"
        for i, line in enumerate(old_intro)
        if line.strip() and not line.startswith("# ")
    ]
    added = []
    placed: dict[int, str] = {}
    for path, text in sorted(topic_texts.items()):
        intro, moved = sections(path, text)
        if sum(1 for line in intro if line.startswith("# ")) != 1:
            problems.append(f"{path}: its introduction has no title or more than one")
        previous = -1
        for section in moved:
            candidates = by_content.get(normalised(section, record), [])
            free = [i for i in candidates if i not in placed]
            if not candidates:
                added.append(f"{path}:{section.line}: {section.lines[0]}")
                continue
            if not free:
                where = placed[candidates[0]]
                problems.append(
                    f"{path}:{section.line}: {section.lines[0]!r} is already in {where}"
                )
                continue
            index = free[0]
            placed[index] = f"{path}:{section.line}"
            if index < previous:
                problems.append(
                    f"{path}:{section.line}: {section.lines[0]!r} comes before a section "
                    f"that followed it in the old record"
                )
            previous = index
    for index, section in enumerate(old_sections):
        if index not in placed:
            problems.append(
                f"{OLD_PATH}:{section.line}: {section.lines[0]!r} is in no topic file as it "
                f"was (missing, or a line of it changed, added or lost)"
            )
    return Split(tuple(problems), tuple(added))


def topic_files(root: Path = ROOT) -> dict[str, str]:
    """The topic files of the record, by repository path."""
    return {
        f"{RESULTS_DIR}/{p.name}": p.read_text(encoding="utf-8")
        for p in sorted((root / RESULTS_DIR).glob("*.md"))
    }


def old_record(commit: str = BASE_COMMIT, root: Path = ROOT) -> str:
    """benchmarks/README.md as it was at ``commit``."""
    return subprocess.run(
        ["git", "-C", str(root), "show", f"{commit}:{OLD_PATH}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=BASE_COMMIT, help="commit of the whole record")
    args = parser.parse_args(argv)
    old_text = old_record(args.base)
    topics = topic_files()
    split = check_split(old_text, topics)
    for problem in split.problems:
        print(problem)
    if split.problems:
        return 1
    old_count = len(sections(OLD_PATH, old_text)[1])
    for path, text in topics.items():
        print(f"{path}: {len(sections(path, text)[1])} sections")
    print(f"{old_count} sections of {OLD_PATH} at {args.base}: each in one topic file, in order")
    for section in split.added:
        print(f"added since: {section}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
