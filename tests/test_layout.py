"""The layout's import rules: sub-packages import only those below them in the data flow.

Every ``import`` statement of every module is read (including those inside functions, which
the CLI uses to keep start-up fast), so a lazy import cannot hide a wrong dependency.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: What each sub-package of ``solver`` may import besides ``models`` and itself.
ALLOWED: dict[str, set[str]] = {
    "capacity": set(),
    "program": {"capacity"},
    "survivability": {"capacity"},
    "solve": {"capacity", "program", "survivability"},
    "replay": {"capacity", "survivability"},
    "outputs": {"capacity", "survivability"},
    "studies": {"capacity", "program", "survivability", "solve", "replay", "outputs"},
    "cli": {"capacity", "program", "survivability", "solve", "replay", "outputs", "studies"},
}

#: Third-party libraries only some places may import (the style guide's rule).
CONFINED: dict[str, set[str]] = {
    "click": {"cli"},
    "pulp": {"program", "solve"},
    "highspy": {"solve"},
    "ray": {"studies"},
}


def imports(path: Path) -> Iterator[str]:
    """Every module name ``path`` imports, at top level or inside a function."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def package_of(path: Path) -> str:
    """``solver/<package>/x.py`` → ``package``; ``models/x.py`` → ``models``."""
    rel = path.relative_to(ROOT).parts
    return rel[1] if rel[0] == "solver" and len(rel) > 2 else rel[0]


def test_every_sub_package_is_named_in_the_rules() -> None:
    packages = {p.name for p in (ROOT / "solver").iterdir() if (p / "__init__.py").exists()}
    assert packages == set(ALLOWED)


@pytest.mark.parametrize("package", sorted(ALLOWED))
def test_sub_package_imports_only_what_it_may(package: str) -> None:
    wrong = []
    for path in sorted((ROOT / "solver" / package).rglob("*.py")):
        for name in imports(path):
            parts = name.split(".")
            other = parts[1] if parts[0] == "solver" and len(parts) > 1 else package
            if other != package and other not in ALLOWED[package]:
                wrong.append(f"{path.relative_to(ROOT)} imports {name}")
    assert wrong == []


def test_models_never_import_solver() -> None:
    wrong = [f"{p.relative_to(ROOT)} imports {name}"
             for p in sorted((ROOT / "models").rglob("*.py")) for name in imports(p)
             if name.split(".")[0] == "solver"]
    assert wrong == []


@pytest.mark.parametrize("library", sorted(CONFINED))
def test_libraries_stay_where_they_belong(library: str) -> None:
    wrong = []
    for path in sorted([*(ROOT / "solver").rglob("*.py"), *(ROOT / "models").rglob("*.py")]):
        if package_of(path) in CONFINED[library]:
            continue
        wrong += [f"{path.relative_to(ROOT)} imports {name}" for name in imports(path)
                  if name.split(".")[0] == library]
    assert wrong == []


def test_the_rule_checker_sees_a_lazy_import(tmp_path: Path) -> None:
    """The checker reads imports inside functions too (what a lazy import would hide)."""
    module = tmp_path / "m.py"
    module.write_text("def f():\n    from solver.outputs.report import write_report\n")
    assert list(imports(module)) == ["solver.outputs.report"]


def test_ruff_lints_solver_outputs_and_skips_only_the_generated_folder() -> None:
    """``extend-exclude = ["outputs"]`` matched solver/outputs/ too, whose unused imports then
    went unseen; the exclusion is anchored to the top-level folder plans are written to."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("ruff") is None:
        pytest.skip("ruff is not installed (the test extra installs it)")
    shown = subprocess.run([sys.executable, "-m", "ruff", "check", "--show-files", "."],
                           cwd=ROOT, capture_output=True, text=True, check=True).stdout
    files = {Path(line.strip()).resolve() for line in shown.splitlines() if line.strip()}
    ours = {p.resolve() for p in (ROOT / "solver" / "outputs").glob("*.py")}
    assert ours and ours <= files
    assert not any(f.is_relative_to(ROOT / "outputs") for f in files)


def test_a_test_module_importing_another_collects_under_the_pytest_script() -> None:
    """``.venv/bin/pytest tests/test_schedule.py`` (the console script, which puts no working
    directory on ``sys.path``) failed at collection in a fresh clone and in every worktree:
    ``No module named 'tests'`` — test_schedule imports tests.test_periods, and an editable
    install maps only models, solver and inputs. ``python -m pytest`` worked only because
    ``-m`` adds the working directory; ``-P`` runs it as the script does."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-P", "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", "tests/test_schedule.py"],
                         cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:]
