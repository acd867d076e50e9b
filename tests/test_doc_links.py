"""Links and references into the documents resolve.

Every relative Markdown link in README.md, docs/ and benchmarks/ reaches a file, and its anchor
(``#…``) a heading of that file. And every place in the tree that cites the benchmark record by
a section's title — ``benchmarks/results/over-periods.md, "Over periods"`` in a comment or a
document — names a file that exists and a heading or bold lead-in of that file: when
benchmarks/README.md was split into topic files (session 24) a hundred such citations pointed
at a front page that no longer held the sections they named."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from benchmarks.record_split import anchors

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^()\s]+)\)")
CODE_SPAN = re.compile(r"`[^`\n]*`")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
#: A citation of the record: the file, then a quoted title ("…") after a comma, colon or
#: parenthesis; comment markers and line breaks inside the quote are read as spaces.
CITATION = re.compile(
    r"(benchmarks/(?:README|results/[\w-]+)\.md)`?(?:[,:]\s*|\s+)\(?\"([^\"]{3,200})\""
)
SOURCE_DIRS = ("benchmarks", "docs", "models", "solver", "tests", "inputs")


def markdown_files() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return found + sorted((ROOT / "benchmarks").rglob("*.md"))


def links(text: str) -> list[tuple[int, str]]:
    """(line, target) of each link outside fenced code and code spans."""
    found = []
    fenced = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            found += [(number, m.group(1)) for m in LINK.finditer(CODE_SPAN.sub("", line))]
    return found


def unresolved_links(path: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for number, target in links(path.read_text(encoding="utf-8")):
        if SCHEME.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        reached = (path.parent / file_part).resolve() if file_part else path
        where = f"{path.relative_to(root)}:{number}: {target}"
        if not reached.exists():
            problems.append(f"{where}: no such file")
        elif (
            anchor
            and reached.suffix == ".md"
            and anchor not in anchors(reached.read_text(encoding="utf-8"))
        ):
            problems.append(f"{where}: no heading with that anchor")
    return problems


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_reaches_a_file_and_heading(path: Path) -> None:
    assert unresolved_links(path) == []


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("# A\n\n## Two words\n", encoding="utf-8")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#two-words) [gone](c.md) [stale](a.md#one-word) `[code](x.md)`\n"
        "```\n[fenced](y.md)\n```\n[web](https://example.com/z.md)\n",
        encoding="utf-8",
    )
    found = [f.split(": ", 1)[1] for f in unresolved_links(page, tmp_path)]
    assert found == ["c.md: no such file", "a.md#one-word: no heading with that anchor"]


def leads(text: str) -> list[str]:
    """A Markdown file's headings and bold or italic lead-ins, each with the two lines after it
    (a lead-in wraps), lower case, spaces collapsed."""
    lines = text.split("\n")
    return [
        " ".join(" ".join(lines[i : i + 3]).split()).lower()
        for i, line in enumerate(lines)
        if line.startswith(("#", "*"))
    ]


def citations(text: str) -> list[tuple[int, str, str]]:
    """(line, cited file, quoted title) of each citation of the record in a source text."""
    flat = re.sub(r"\n[ \t]*(?:#:?|//)?[ \t]*", " ", text)  # comment markers and indents
    found = []
    for match in CITATION.finditer(flat):
        # the citation's line in the original text: count the path's occurrences before it
        before = flat[: match.start()].count(match.group(1))
        starts = [m.start() for m in re.finditer(re.escape(match.group(1)), text)]
        line = text[: starts[before]].count("\n") + 1
        found.append((line, match.group(1), " ".join(match.group(2).split())))
    return found


def source_files() -> list[Path]:
    found = [ROOT / "README.md"]
    for folder in SOURCE_DIRS:
        found += [
            p
            for p in sorted((ROOT / folder).rglob("*"))
            if p.suffix in {".py", ".md", ".yaml", ".yml"}
            and ".venv" not in p.parts
            and p != Path(__file__).resolve()  # its own examples cite files that do not exist
        ]
    return found


def unresolved_citations(path: Path, root: Path = ROOT) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return []
    problems = []
    for line, cited, title in citations(text):
        target = root / cited
        where = f"{path.relative_to(root)}:{line}: {cited}, {title!r}"
        if not target.exists():
            problems.append(f"{where}: no such file")
        elif not any(title.lower() in lead for lead in leads(target.read_text(encoding="utf-8"))):
            problems.append(f"{where}: no heading or lead-in of that file says it")
    return problems


def test_every_citation_of_the_record_names_a_title_its_file_holds() -> None:
    problems = [p for path in source_files() for p in unresolved_citations(path)]
    assert problems == []


def test_a_citation_of_a_section_moved_elsewhere_is_found(tmp_path: Path) -> None:
    results = tmp_path / "benchmarks" / "results"
    results.mkdir(parents=True)
    (results / "scale.md").write_text("# Scale\n\n## Run I: why small ×25\n", encoding="utf-8")
    (tmp_path / "benchmarks" / "README.md").write_text("# Benchmarks\n", encoding="utf-8")
    code = tmp_path / "strategy.py"
    code.write_text(
        '#: handed over (benchmarks/results/scale.md, "Run I") [1].\n'
        "#: and (benchmarks/README.md,\n"
        '#: "Run I"), a front page without it.\n'
        '#: and (benchmarks/results/gone.md, "Run I").\n',
        encoding="utf-8",
    )
    found = unresolved_citations(code, tmp_path)
    assert found == [
        "strategy.py:2: benchmarks/README.md, 'Run I': no heading or lead-in of that file says it",
        "strategy.py:4: benchmarks/results/gone.md, 'Run I': no such file",
    ]
