"""Every output path is checked before any work (solver/outputs/destinations.py): too long, a
symbolic link (dangling, looping, or to elsewhere), a pseudo-filesystem, a directory holding
what a plan does not write, or an input where an output goes — each refused with exit 2 before
the solve, and nothing written.

Each case was found by the hostile-input audit: a traceback after a full solve, or an input
lost.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from inputs import scenarios_dir
from tests.hostile import refused, run

TINY_PATH = scenarios_dir() / "tiny.yaml"
TINY: dict[str, Any] = yaml.safe_load(TINY_PATH.read_text(encoding="utf-8"))
#: What ``plan`` prints before it solves: a refusal must come before it.
PLANNING = "planning tiny"


def tiny(tmp_path: Path, file: str = "s.yaml", **edits: Any) -> Path:
    doc = copy.deepcopy(TINY)
    doc.update(edits)
    path = tmp_path / file
    path.write_text(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return path


def plan_into(out: Path | str, scenario: Path = TINY_PATH) -> Any:
    return run("plan", str(scenario), "--solver", "highs", "--time-limit", "5", "--out",
               str(out))


def refused_before_the_solve(result: Any, *texts: str) -> None:
    refused(result, *texts)
    assert PLANNING not in result.output, result.output


# --- names too long ---------------------------------------------------------------------------


def test_an_out_name_too_long_is_refused_before_the_solve(tmp_path: Path) -> None:
    # Was: OSError "File name too long" raised from Path.exists, a traceback.
    out = tmp_path / ("x" * 300)
    refused_before_the_solve(plan_into(out), "--out", "is 300 bytes long; the file system "
                             "allows 255")


def test_a_default_directory_too_long_is_refused_before_the_solve(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A name of 120 characters is a name (at most 128), but 360 bytes of UTF-8: too long for
    # outputs/<name>/. Was: a traceback after the full solve.
    monkeypatch.chdir(tmp_path)
    path = tiny(tmp_path, file="jp.yaml", name="日本" * 60)
    result = run("plan", str(path), "--time-limit", "5")
    refused(result, f"{path}: name", "is 360 bytes", "give --out")
    assert "planning" not in result.output
    assert not (tmp_path / "outputs").exists()


def test_a_path_too_long_is_refused(tmp_path: Path) -> None:
    out = tmp_path.joinpath(*(["d" * 200] * 21))  # each name fits; the whole is > 4096 bytes
    refused_before_the_solve(plan_into(out), "--out", "the path would be", "allows 4096")


# --- symbolic links ------------------------------------------------------------------------


def test_a_dangling_symbolic_link_is_refused_before_the_solve(tmp_path: Path) -> None:
    # Was: FileExistsError from mkdir after the solve, a traceback.
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere")
    refused_before_the_solve(plan_into(out), f"{out}: --out: is a symbolic link to "
                             f"{tmp_path / 'nowhere'}, which does not exist")


def test_a_symbolic_link_loop_is_refused_before_the_solve(tmp_path: Path) -> None:
    # Was: RuntimeError "Symlink loop" after the solve, a traceback.
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    refused_before_the_solve(plan_into(tmp_path / "a"), "--out: is a symbolic link loop")
    refused_before_the_solve(plan_into(tmp_path / "a" / "out"), "--out", "loops")


def test_a_symbolic_link_to_a_directory_is_refused(tmp_path: Path) -> None:
    # Was: written through the link; replacing the directory whole would replace the link.
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    refused_before_the_solve(plan_into(tmp_path / "link"), "is a symbolic link to",
                             f"give --out the path it points to ({tmp_path / 'real'})")
    assert list((tmp_path / "real").iterdir()) == []


def test_an_output_file_that_is_a_dangling_link_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "cmp.xlsx"
    out.symlink_to(tmp_path / "gone.xlsx")
    result = run("compare", str(TINY_PATH), "--out", str(out), "--time-limit", "5")
    refused(result, f"{out}: --out: is a symbolic link to")
    assert "planning" not in result.output


# --- places that cannot be written ---------------------------------------------------------------


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
def test_a_pseudo_filesystem_is_refused_before_the_solve() -> None:
    # Was: FileNotFoundError from mkdir under /proc after the solve (root may "write" there by
    # its permissions: only making the staging directory tells).
    refused_before_the_solve(plan_into("/proc/fleetplan-out"), "/proc/fleetplan-out: --out: "
                             "cannot write there")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="no /proc")
def test_a_file_output_on_a_pseudo_filesystem_is_refused_before_the_fit(tmp_path: Path) -> None:
    measurements = tmp_path / "m.csv"
    measurements.write_text("kind,model,gpu,tp,batch,input_tokens,value\n"
                            "prefill_ms,Llama-2-70B,H100-SXM,2,1,512,60\n", encoding="utf-8")
    result = run("calibrate", str(measurements), "--out", "/proc/fleetplan-overlay.yaml")
    refused(result, "/proc/fleetplan-overlay.yaml: --out: cannot write there")
    assert "fitting" not in result.output
    template = run("template", "--out", "/proc/fleetplan-template.xlsx")
    refused(template, "/proc/fleetplan-template.xlsx: --out: cannot write there")


# --- inputs where outputs go ----------------------------------------------------------------------


def test_an_overlay_inside_the_output_directory_is_never_replaced(tmp_path: Path) -> None:
    # Was: an overlay named contract.yaml in the output directory was replaced by the contract.
    out = tmp_path / "out"
    out.mkdir()
    overlay = out / "contract.yaml"
    overlay.write_text("gpus: []\n", encoding="utf-8")
    path = tiny(tmp_path, catalog={"overlays": [str(overlay)]})
    refused_before_the_solve(plan_into(out, path), f"{overlay}: --out: would overwrite the "
                             f"input {overlay}")
    assert overlay.read_text(encoding="utf-8") == "gpus: []\n"


def test_any_input_inside_the_output_directory_is_refused(tmp_path: Path) -> None:
    # The directory is replaced whole: an input anywhere in it would be removed.
    out = tmp_path / "out"
    (out / "in").mkdir(parents=True)
    scenario = tiny(out / "in")
    refused_before_the_solve(plan_into(out, scenario), f"{out / 'in' / 's.yaml'}: --out: would "
                             f"remove the input {scenario}")
    assert scenario.exists()


def test_a_directory_holding_other_files_is_refused_and_kept(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n", encoding="utf-8")
    refused_before_the_solve(plan_into(out), f"{out}: --out: holds `notes.txt`, which a plan "
                             "does not write")
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


def test_a_plan_directory_and_an_empty_one_are_accepted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    first = plan_into(out)
    assert first.exit_code == 0, first.output
    again = plan_into(out)
    assert again.exit_code == 0, again.output
    assert {p.name for p in out.iterdir()} >= {"plan.json", "report.md", "plan.xlsx"}
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
