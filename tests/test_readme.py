"""The README's "Bring your own measurements" walk-through prints what the commands print.

Its transcript had drifted from the commands' output (old column titles, `1400.0` for
`1,400.0`, a workloads line the plan no longer prints): a planner comparing their terminal with
the README saw a different tool. Here its import-bench sweep is written as `vllm bench serve`
writes it (tests/bench_files.py; the served rates and P95s are the README table's, the
sequences in flight 80/140/200/260), its `chat.yaml` is taken from the README as printed, and
the commands it shows are run as written.
"""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from click.testing import CliRunner

from solver.cli import main
from tests import bench_files as bf

README = Path(__file__).resolve().parents[1] / "README.md"
IMPORT = "$ fleetplan import-bench "
PLAN = "$ fleetplan plan chat.yaml --out out"


def _console_after(text: str, command_start: str, after: str = "") -> tuple[str, list[str]]:
    """The first command line starting ``command_start`` (below the line starting ``after``) in
    a console block, and the lines shown after it up to the block's end."""
    lines = text.splitlines()
    first = next(k for k, line in enumerate(lines) if line.startswith(after))
    i = next(k for k in range(first, len(lines)) if lines[k].startswith(command_start))
    end = next(k for k in range(i + 1, len(lines)) if lines[k].startswith("```"))
    return lines[i], lines[i + 1:end]


def _loads(table: list[str]) -> list[bf.Load]:
    """The README table's rows as tested loads: offered, served, TTFT and per-token P95."""
    in_flight = iter((80, 140, 200, 260))
    out = []
    for row in table:
        cells = row.split()
        out.append(bf.Load(float(cells[0]), float(cells[2]), float(cells[3].replace(",", "")),
                           float(cells[4]), peak_in_flight=next(in_flight)))
    return out


def _run(command: str, cwd: Path) -> str:
    args = []
    for word in shlex.split(command.removeprefix("$ fleetplan ")):
        matched = sorted(str(p.name) for p in cwd.glob(word)) if "*" in word else [word]
        args += matched
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_import_bench_walk_through_prints_what_the_readme_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = README.read_text(encoding="utf-8")
    scenario = text.split("```yaml\n# chat.yaml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "chat.yaml").write_text(scenario, encoding="utf-8")
    command, shown = _console_after(text, IMPORT)
    rows = [line for line in shown if line.split()[1:2] == ["req/s"]]
    assert len(rows) == 4
    for x in _loads(rows):
        bf.write_json(tmp_path / f"vllm-rate{x.load:g}.json", bf.vllm_new(x))
    monkeypatch.chdir(tmp_path)
    assert _run(command, tmp_path).splitlines() == shown
    plan_command, plan_shown = _console_after(text, PLAN, after=IMPORT)
    printed = _run(plan_command, tmp_path).splitlines()
    table = [line for line in plan_shown if line != "…"]
    start = printed.index(table[0])
    assert printed[start:start + len(table)] == table


TRACE = "../shared/data/traces/AzureLLMInferenceTrace_conv.csv"  # as the walk-through gives it
DOCS_REPLAY = README.parent / "docs" / "replay.md"


def test_the_trace_walk_through_pastes_the_block_profile_prints(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's `chat.yaml` left out the `burst` and `p5` lines `profile` prints, so a
    planner pasting the printed block planned another workload than the README's (utilization
    41.7 % against 42.2 %). Now its workload holds the block as printed, docs/replay.md's
    transcript of `profile` is what the command prints, and its `chat.yaml` is the README's."""
    import yaml

    from solver.cli.profile import PASTE_HINT

    monkeypatch.chdir(README.parent)
    if not Path(TRACE).exists():
        pytest.skip(f"{TRACE} not present")
    printed = CliRunner().invoke(main, ["profile", TRACE]).stdout
    block = yaml.safe_load(printed.split(PASTE_HINT + "\n", 1)[1])
    readme = README.read_text(encoding="utf-8")
    scenario = readme.split("$ cat > chat.yaml <<'YAML'\n", 1)[1].split("YAML\n", 1)[0]
    chat = yaml.safe_load(scenario)["workloads"][0]
    assert {key: chat[key] for key in block} == block
    docs = DOCS_REPLAY.read_text(encoding="utf-8")
    _, shown = _console_after(docs, f"$ fleetplan profile {TRACE}")
    assert shown == printed.splitlines()
    assert f"```yaml\n{scenario}```" in docs


def _commands(block: list[str]) -> list[tuple[str, list[str]]]:
    """A console transcript's commands (continuation lines joined) with the lines each shows."""
    out: list[tuple[str, list[str]]] = []
    lines = iter(block)
    for line in lines:
        if line.startswith("$ "):
            command = line
            while command.endswith("\\"):
                command = command[:-1] + next(lines).strip()
            out.append((command, []))
        else:
            out[-1][1].append(line)
    return out


def test_the_trace_walk_through_prints_what_docs_replay_shows(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """docs/replay.md's plan, check and simulate of the walk-through's chat.yaml (the README's)
    show lines the commands print, in order ("…" leaves lines out; the solve's seconds vary)."""
    if not (README.parent / TRACE).exists():
        pytest.skip(f"{TRACE} not present")
    (tmp_path / "shared").symlink_to((README.parent / TRACE).parents[2])
    work = tmp_path / "w"
    work.mkdir()
    readme = README.read_text(encoding="utf-8")
    (work / "chat.yaml").write_text(
        readme.split("$ cat > chat.yaml <<'YAML'\n", 1)[1].split("YAML\n", 1)[0])
    monkeypatch.chdir(work)
    docs = DOCS_REPLAY.read_text(encoding="utf-8")
    first, rest = _console_after(docs, "$ fleetplan plan chat.yaml --out out")
    commands = _commands([first, *rest])
    assert [c.split()[2] for c, _ in commands] == ["plan", "check", "simulate"]
    for command, shown in commands:
        result = CliRunner().invoke(main, shlex.split(command.removeprefix("$ fleetplan ")))
        assert result.exit_code == 0, result.output
        printed = iter(result.output.splitlines())
        for line in shown:
            if line == "…" or " s, gap " in line:
                continue
            assert line in printed, (command, line)  # found after the line before it


def test_the_quarterly_keys_name_every_field_a_scenario_must_give() -> None:
    """A new user wrote an offer's `owned:` block from the README's list of its keys and got
    "owned.stock_gpus: Field required": the list left out `stock_gpus`. Every required field
    of owned hardware, a reserved quote and an inventory line, and the inventory's price (which
    `validate` asks for where it is missing), is in the README's list."""
    from models.horizon import HeldNodes
    from models.offers import OwnedTerms, ReservedTerms

    text = README.read_text()
    section = text[text.index("A scenario gains `horizon:"):text.index("## Scenarios")]
    for model in (OwnedTerms, ReservedTerms, HeldNodes):
        for name, field in model.model_fields.items():
            if field.is_required():
                assert name in section, f"{model.__name__}.{name}"
    assert "price_per_gpu_hour}" in section  # an inventory line's own price
    assert "counted from 0" in section
