"""Terminal output: tables measured by rich (no hand padding), plain when not a terminal."""

from __future__ import annotations

import importlib
import io
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from inputs import scenarios_dir
from models.loader import load_scenario
from models.text import InertStream
from solver.cli import COMMANDS, main
from solver.cli.show import Col, progress, rich_table_lines, table_lines
from solver.cli.simulate import latency_table
from solver.replay.engine import LatencyPercentiles, ReplaySummary

SOLVER = Path(__file__).resolve().parents[1] / "solver"


def _right_edges(header: str, titles: list[str]) -> list[int]:
    """Where each right-aligned column ends: the end of its title in the header line."""
    edges, at = [], 0
    for title in titles:
        at = header.index(title, at) + len(title)
        edges.append(at)
    return edges


def _summary(ms: float) -> ReplaySummary:
    p = LatencyPercentiles(p50=ms / 10, p95=ms, p99=ms)
    return ReplaySummary(requests=1_000_000, completed=999_999, rejected=0, failed=1,
                         rejected_too_long=0, preempted=0, preemptions=0,
                         ttft_ms=p, tpot_ms=LatencyPercentiles(12.0, 40.0, 55.5), e2e_ms=p,
                         slo_attainment=0.5)


def test_a_million_ms_keeps_its_column() -> None:
    """1,000,000 ms is nine characters: the column widens, the cells never run together."""
    workload = load_scenario(scenarios_dir() / "tiny.yaml").workloads[0]
    lines = latency_table([("before failure", _summary(120.0)),
                           ("after failure", _summary(1_000_000.0))], workload)
    table = lines[: lines.index("")]
    header, rows = table[0], table[1:]
    titles = ["before failure: P50", "P95", "P99", "after failure: P50", "P95", "P99", "SLO P95"]
    edges = _right_edges(header, titles)
    assert any("1,000,000" in row for row in rows)
    for row in rows:
        cells = row.split()
        assert len(cells) == 1 + len(titles), row  # one token per column: nothing ran together
        for edge in edges:  # every number ends where its column's title ends
            assert row[edge - 1] != " " and (edge == len(row) or row[edge] == " "), (row, edge)


def test_plain_tables_have_no_markup_colour_or_trailing_space() -> None:
    lines = table_lines(["Name", Col("Value [ms]", right=True)],
                        [("[bold]x[/bold]", "1,000,000"), (None, "3")], terminal=False)
    assert lines == ["  Name            Value [ms]",
                     "  [bold]x[/bold]   1,000,000",
                     "  —                        3"]
    assert not any("\x1b" in line for line in lines)


def _random_table(rng: random.Random) -> tuple[list[Col], list[tuple[object, ...]]]:
    """Mostly cells the plain layout takes (printable ASCII, markup-like text included), some it
    leaves to rich: empty, spaces at an end, a tab, non-ASCII, ``None``, a table too wide."""
    words = ["a", "GPU", "[bold]x[/]", ":smile:", "1,000.00", "H100-SXM", "L4 (4)", "-", "%"]
    odd: list[object] = ["", " x", "x ", "a\tb", "é", "—", "全", None, "w" * 600]
    cols = [Col(rng.choice(words) + str(i), right=rng.random() < 0.5)
            for i in range(rng.randint(1, 6))]

    def cell() -> object:
        if rng.random() < 0.05:
            return rng.choice(odd)
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 3)))

    return cols, [tuple(cell() for _ in cols) for _ in range(rng.randint(0, 5))]


def test_plain_tables_are_laid_out_as_rich_lays_them_out() -> None:
    """table_lines lays out a plain table of ASCII itself (rich costs ~0.1 s of CPU to import at
    start-up); what it prints is what rich prints, on 400 seeded random tables."""
    rng = random.Random(7)
    for _ in range(400):
        cols, rows = _random_table(rng)
        assert table_lines(cols, rows, terminal=False) == rich_table_lines(cols, rows, 2, False)


def test_a_plain_ascii_table_does_not_import_rich() -> None:
    code = ("import sys; from solver.cli.show import table_lines; "
            "table_lines(['GPU', 'Zones'], [('L4', '1')], terminal=False); "
            "print('rich' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.strip() == "False"


def test_a_terminal_gets_a_ruled_header() -> None:
    lines = table_lines(["Name", Col("Value", right=True)], [("a", "1")], terminal=True)
    assert any(set(line.strip()) == {"─"} for line in lines)


def test_no_hand_padded_table_is_left() -> None:
    """Column widths come from rich: no format spec pads a cell (``:<10``, ``:>9``) and no
    string is justified by hand anywhere in the package but the one table helper (whose plain
    tables of ASCII match rich's: test_plain_tables_are_laid_out_as_rich_lays_them_out)."""
    padding = re.compile(r"\{[^{}]*:[^{}]*[<>^]\d+[^{}]*\}|\.(l|r)just\(")
    helper = SOLVER / "cli" / "show.py"
    found = [f"{path.relative_to(SOLVER)}:{n}" for path in sorted(SOLVER.rglob("*.py"))
             if path != helper
             for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
             if padding.search(line)]
    assert found == []


def test_help_lists_every_command_with_its_own_first_line() -> None:
    result = CliRunner().invoke(main, ["--help"])
    assert result.exit_code == 0
    for name, entry in COMMANDS.items():
        command = importlib.import_module(f"solver.cli.{entry.module}").command
        assert command.name == name
        assert command.get_short_help_str(limit=10_000) == entry.short_help
        assert name in result.output


def test_a_terminal_table_holds_no_escape_and_measures_escaped_user_text() -> None:
    """Every line passes models.text.InertStream, which shows an escape instead of running it:
    the table itself carries none (no bold, no colour), and an escape in user text is escaped
    before the columns are measured, so it stays aligned as shown."""
    lines = table_lines(["Name", Col("Value", right=True)],
                        [("evil\x1b[31m", "1"), ("ok", "22")], terminal=True)
    assert not any("\x1b" in line for line in lines)
    header, _, evil, ok = lines
    assert evil.startswith("  evil\\x1b[31m")
    assert len(evil) == len(ok) == len(header)  # right-aligned numbers end together


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_spinner_draws_on_the_terminal_itself_with_the_message_made_inert(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The live progress line needs the terminal's controls (hide the cursor, redraw): it
    writes past the inert stream, and escapes only the text it shows."""
    terminal = _Tty()
    monkeypatch.setattr(sys, "stderr", InertStream(terminal))
    with progress("planning evil\x1b]0;owned\x07…"):
        pass
    drawn = terminal.getvalue()
    assert "\x1b[?25l" in drawn  # rich hid the cursor: its controls reached the terminal
    assert "\x1b]0;owned" not in drawn  # the user's escape did not
    assert drawn.rstrip().endswith("planning evil\\x1b]0;owned\\x07 done")


def test_the_plan_summary_says_its_status_in_words() -> None:
    from procurement_fixtures import make_plan, make_scenario

    from models.plan import SolveStatus
    from solver.cli.plan import render

    plan = make_plan().model_copy(update={"status": SolveStatus.time_limit})
    first = render(plan, make_scenario(), [])[0]
    assert first.startswith("plan hand-made: stopped at the time limit (")
    assert "time_limit" not in first
