"""Input errors that name the file, the place inside it and the fix — never a traceback."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with an input."""

    file: str
    location: str
    """Path inside the file, e.g. ``workloads[2].slo.ttft_p95_ms`` (empty for the whole file)."""
    message: str
    fix: str = ""

    def __str__(self) -> str:
        where = f"{self.file}: {self.location}" if self.location else self.file
        text = f"{where}: {self.message}"
        return f"{text} — {self.fix}" if self.fix else text


#: Problems an error lists; the rest are counted (a file with 10^5 bad rows is one message).
MAX_SHOWN_PROBLEMS = 50


class InputError(Exception):
    """Bad input: carries every problem found, not just the first."""

    #: What the problems are in, as the heading names it.
    subject = "the input"

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__(self.render())

    def render(self) -> str:
        """Human-readable list, one problem per line."""
        n = len(self.problems)
        head = f"{n} problem{'s' if n != 1 else ''} in {self.subject}:"
        shown = [f"  - {p}" for p in self.problems[:MAX_SHOWN_PROBLEMS]]
        if n > MAX_SHOWN_PROBLEMS:
            shown.append(f"  … and {n - MAX_SHOWN_PROBLEMS:,} more")
        return "\n".join([head, *shown])


class MissingExtra(InputError):
    """A command needs an optional dependency that is not installed: the environment is at
    fault, not the input, though it is reported as input problems are (located, exit 2)."""

    subject = "the environment (not the input)"


#: Where a GPU type or model the built-in catalog lacks is added (:func:`or_add`).
ADD_GPU = "`catalog: {gpus: [...]}` (fields of models.catalog.GpuType; inputs/catalog/README.md)"
ADD_MODEL = ("`catalog: {models: [...]}` (fields of models.catalog.LlmSpec; "
             "inputs/catalog/README.md)")


def or_add(suggestion: str, where: str) -> str:
    """``suggestion`` (:func:`did_you_mean`'s) and how to add a name the catalog lacks to the
    scenario (``where``: :data:`ADD_GPU`, :data:`ADD_MODEL`): a new user's `A800` got "did you
    mean `H200` or `B200` or `A10G`?" and no word that a scenario can add a GPU type."""
    head = "Or add it" if suggestion.endswith("?") else "or add it"
    sep = " " if suggestion.endswith("?") else "; "
    return (f"{suggestion}{sep}{head}, if the built-in catalog lacks it, under the scenario's "
            f"{where}")


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """A fix suggestion for an unknown name: the closest known names, else the full list (or,
    with none known, that there are none)."""
    options = sorted(set(known))
    if not options:
        return "none are defined: add one, or remove the reference"
    close = difflib.get_close_matches(name, options, n=3, cutoff=0.5)
    if not close:
        lowered = {o.lower(): o for o in options}
        close = [lowered[name.lower()]] if name.lower() in lowered else []
    if close:
        return "did you mean " + " or ".join(f"`{c}`" for c in close) + "?"
    shown = ", ".join(options[:12]) + (", …" if len(options) > 12 else "")
    return f"known names: {shown}"


def format_location(loc: Sequence[str | int]) -> str:
    """Render a pydantic error location as ``workloads[2].slo.ttft_p95_ms``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
