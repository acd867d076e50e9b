"""benchmarks/record_split.py: the proof that the benchmark record moved into its topic files.

The checker is tested on small records written here (a split it must accept, and each way a
split can lose or change text, which it must refuse), then run on the real split where git has
the commit of the whole record."""

from __future__ import annotations

import subprocess

import pytest

from benchmarks.record_split import (
    BASE_COMMIT,
    ROOT,
    anchors,
    check_split,
    github_slug,
    old_record,
    topic_files,
)

OLD = """# Benchmarks

## Replay (`replay.py`)

Replayed 19,366 requests in 0.45 s.

### Under load

Two runs: 0.45 s, 0.52 s.

## Planner

| size | gap |
|---|---:|
| small | 0.9 % |

## At the landing

Plan 21,538,163 at 2.57 %.
"""

REPLAY = """# Replay

A topic file's introduction, which the old record did not have.

## Replay (`replay.py`)

Replayed 19,366 requests in 0.45 s.

### Under load

Two runs: 0.45 s, 0.52 s.
"""

PLANNER = """# Planner and landings

## Planner

| size | gap |
|---|---:|
| small | 0.9 % |

## At the landing

Plan 21,538,163 at 2.57 %.
"""


def split(**texts: str) -> dict[str, str]:
    return {f"benchmarks/results/{name}.md": text for name, text in texts.items()}


def test_a_split_that_moves_every_section_whole_is_accepted() -> None:
    result = check_split(OLD, split(replay=REPLAY, planner=PLANNER))
    assert result.problems == ()
    assert result.added == ()


def test_a_heading_moved_to_another_level_is_allowed() -> None:
    promoted = REPLAY.replace("### Under load", "## Under load")
    assert check_split(OLD, split(replay=promoted, planner=PLANNER)).problems == ()


def test_a_line_lost_is_found() -> None:
    lost = PLANNER.replace("| small | 0.9 % |\n", "")
    problems = check_split(OLD, split(replay=REPLAY, planner=lost)).problems
    assert problems == (
        "benchmarks/README.md:11: '## Planner' is in no topic file as it was "
        "(missing, or a line of it changed, added or lost)",
    )


def test_a_figure_changed_is_found() -> None:
    changed = REPLAY.replace("0.45 s, 0.52 s", "0.45 s, 0.50 s")
    problems = check_split(OLD, split(replay=changed, planner=PLANNER)).problems
    assert [p.split(":")[1] for p in problems] == ["7"]  # the old "### Under load"


def test_a_line_moved_into_another_section_is_found() -> None:
    # the table's last row moved under the next heading: both sections differ from the old ones
    moved = PLANNER.replace("| small | 0.9 % |\n\n## At the landing\n", "\n## At the landing\n")
    moved = moved.replace("Plan 21,538,163", "| small | 0.9 % |\nPlan 21,538,163")
    problems = check_split(OLD, split(replay=REPLAY, planner=moved)).problems
    assert [p.split(":")[1] for p in problems] == ["11", "17"]


def test_a_section_in_two_files_is_found() -> None:
    twice = PLANNER + "\n## Replay (`replay.py`)\n\nReplayed 19,366 requests in 0.45 s.\n"
    problems = check_split(OLD, split(replay=REPLAY, planner=twice)).problems
    # planner.md is read first, so replay.md's own copy is the one reported
    assert (
        "benchmarks/results/replay.md:5: '## Replay (`replay.py`)' is already in " in problems[-1]
    )


def test_a_section_in_no_file_is_found() -> None:
    only_planner = PLANNER.replace("## At the landing\n\nPlan 21,538,163 at 2.57 %.\n", "")
    problems = check_split(OLD, split(replay=REPLAY, planner=only_planner)).problems
    assert problems == (
        "benchmarks/README.md:17: '## At the landing' is in no topic file as it was "
        "(missing, or a line of it changed, added or lost)",
    )


def test_sections_out_of_the_old_order_are_found() -> None:
    swapped = "# Planner and landings\n\n## At the landing\n\nPlan 21,538,163 at 2.57 %.\n\n"
    swapped += "## Planner\n\n| size | gap |\n|---|---:|\n| small | 0.9 % |\n"
    problems = check_split(OLD, split(replay=REPLAY, planner=swapped)).problems
    assert len(problems) == 1
    assert "'## Planner' comes before a section that followed it" in problems[0]


def test_a_topic_file_without_its_title_is_found() -> None:
    untitled = REPLAY.replace("# Replay\n", "")
    problems = check_split(OLD, split(replay=untitled, planner=PLANNER)).problems
    assert problems == (
        "benchmarks/results/replay.md: its introduction has no title or more than one",
    )


def test_a_section_measured_after_the_split_is_listed_as_added() -> None:
    later = PLANNER + "\n## At the landing of session 24\n\nPlan 21,500,000 at 2.40 %.\n"
    result = check_split(OLD, split(replay=REPLAY, planner=later))
    assert result.problems == ()
    assert result.added == ("benchmarks/results/planner.md:13: ## At the landing of session 24",)


def test_a_link_into_the_record_may_be_re_pointed_at_the_heading_it_meant() -> None:
    old = OLD.replace(
        "Plan 21,538,163 at 2.57 %.", "Plan 21,538,163 at 2.57 % ([replay](#under-load))."
    )
    followed = PLANNER.replace(
        "Plan 21,538,163 at 2.57 %.", "Plan 21,538,163 at 2.57 % ([replay](replay.md#under-load))."
    )
    assert check_split(old, split(replay=REPLAY, planner=followed)).problems == ()
    # the same link left as it was points at a heading the topic file does not have
    stale = PLANNER.replace(
        "Plan 21,538,163 at 2.57 %.", "Plan 21,538,163 at 2.57 % ([replay](#under-load))."
    )
    assert len(check_split(old, split(replay=REPLAY, planner=stale)).problems) == 1


def test_a_link_out_of_the_record_must_reach_the_same_file() -> None:
    old = OLD.replace("in 0.45 s.", "in 0.45 s ([how](../docs/replay.md#speed)).")
    moved = REPLAY.replace("in 0.45 s.", "in 0.45 s ([how](../../docs/replay.md#speed)).")
    assert check_split(old, split(replay=moved, planner=PLANNER)).problems == ()
    unfixed = REPLAY.replace("in 0.45 s.", "in 0.45 s ([how](../docs/replay.md#speed)).")
    assert len(check_split(old, split(replay=unfixed, planner=PLANNER)).problems) == 1


@pytest.mark.parametrize(
    ("heading", "slug"),
    [
        # anchors that docs/ and README.md link to, as GitHub made them
        (
            "One-token outputs (embeddings and rerankers, `workload.tpot_slo_ms`)",
            "one-token-outputs-embeddings-and-rerankers-workloadtpot_slo_ms",
        ),
        (
            "Profiles from Prometheus (`fleetplan profile --prometheus FILE`)",
            "profiles-from-prometheus-fleetplan-profile---prometheus-file",
        ),
        ("Large ×25 past the hourly rounding", "large-25-past-the-hourly-rounding"),
    ],
)
def test_github_slug(heading: str, slug: str) -> None:
    assert github_slug(heading) == slug


def test_repeated_headings_are_numbered_and_fenced_lines_are_not_headings() -> None:
    text = "# A\n\n## Run\n\n```\n# not a heading\n```\n\n## Run\n"
    assert anchors(text) == {"a": "A", "run": "Run", "run-1": "Run"}


def _has_base_commit() -> bool:
    found = subprocess.run(
        ["git", "-C", str(ROOT), "cat-file", "-e", f"{BASE_COMMIT}^{{commit}}"],
        capture_output=True,
        check=False,
    )
    return found.returncode == 0


@pytest.mark.skipif(not _has_base_commit(), reason=f"git has no commit {BASE_COMMIT}")
def test_the_record_at_its_last_whole_commit_is_in_the_topic_files_verbatim() -> None:
    result = check_split(old_record(), topic_files())
    assert result.problems == ()
