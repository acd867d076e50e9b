"""Read a YAML or JSON document within the limits of :mod:`models.limits`.

The file's size is checked before it is read, its structure before Python objects are built:
YAML is composed here from libyaml's events (or PyYAML's own parser where libyaml is missing),
counting nesting depth, aliases and values — an alias repeated is counted at the size of what
it repeats, so an expansion bomb ("billion laughs") or an alias inside its own anchor is refused
while composing, and nothing deeper than :data:`~models.limits.MAX_DEPTH` reaches a recursive
function. JSON is read by :func:`models.input_files.parse_json`. Every refusal is an
:class:`~models.errors.InputError` naming the file, the line and the limit.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from yaml.composer import Composer, ComposerError
from yaml.constructor import ConstructorError, SafeConstructor
from yaml.events import AliasEvent, MappingStartEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode
from yaml.resolver import Resolver

from models.errors import InputError, Problem
from models.input_files import parse_json, read_text
from models.limits import MAX_ALIASES, MAX_DEPTH, MAX_NODES


def _parser_class() -> Any:
    """libyaml's parser (events in C, ~10× faster than PyYAML's own on large files), or
    PyYAML's pure-Python one where PyYAML was built without libyaml."""
    try:
        from yaml.cyaml import CParser  # type: ignore[attr-defined]
    except ImportError:  # pragma: no cover - every PyYAML wheel we install has libyaml
        from yaml.parser import Parser
        from yaml.reader import Reader
        from yaml.scanner import Scanner

        class PyParser(Reader, Scanner, Parser):
            def __init__(self, stream: str) -> None:
                Reader.__init__(self, stream)
                Scanner.__init__(self)
                Parser.__init__(self)

        return PyParser
    return CParser


_Parser = _parser_class()


class LimitError(ComposerError):
    """A YAML document past one of the structure limits."""


class _GuardedComposer(Composer):
    """PyYAML's composer, counting depth, aliases and (expanded) values as it goes."""

    check_event: Callable[..., bool]  # from the parser it is mixed with
    peek_event: Callable[[], Any]

    def __init__(self) -> None:
        super().__init__()
        self._depth = 0
        self._aliases = 0
        self._nodes = 0
        self._sizes: dict[str, int] = {}
        """Values each anchor's node holds, itself included, aliases expanded."""
        self._open: set[str] = set()
        """Anchors whose node is being composed: an alias to one of them is a cycle."""

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        event = self.peek_event()
        if self.check_event(AliasEvent):
            self._aliases += 1
            if self._aliases > MAX_ALIASES:
                raise LimitError(None, None, f"more than {MAX_ALIASES:,} aliases",
                                 event.start_mark)
            if event.anchor in self._open:
                raise LimitError(None, None, f"alias *{event.anchor} repeats a value that "
                                 "contains it (an endless value)", event.start_mark)
            self._count(self._sizes.get(event.anchor, 1), event)
            return self._compose(parent, index)
        nested = self.check_event(SequenceStartEvent, MappingStartEvent)
        if nested:
            self._depth += 1
            if self._depth > MAX_DEPTH:
                raise LimitError(None, None, f"nested more than {MAX_DEPTH} levels deep",
                                 event.start_mark)
        anchor = event.anchor
        before = self._nodes
        self._count(1, event)
        if anchor is not None:
            self._open.add(anchor)
        node = self._compose(parent, index)
        if anchor is not None:
            self._open.discard(anchor)
            self._sizes[anchor] = self._nodes - before
        if nested:
            self._depth -= 1
        return node

    def _compose(self, parent: Node | None, index: Any) -> Node:
        node = super().compose_node(parent, index)
        assert node is not None  # an event was peeked, so a node follows
        return node

    def _count(self, values: int, event: Any) -> None:
        self._nodes += values
        if self._nodes > MAX_NODES:
            how = ", counting each alias at the size of what it repeats" if self._aliases else ""
            raise LimitError(None, None, f"more than {MAX_NODES:,} values{how}",
                             event.start_mark)


class _StrictConstructor(SafeConstructor):
    """YAML's safe constructor, except that a key given twice in one mapping is an error.

    Plain YAML keeps the last value silently: a second ``workloads:`` would drop the first list.
    """

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[tuple[str, str]] = set()
        for key_node, _ in node.value:  # the keys as written (merged `<<` keys may be overridden)
            if not isinstance(key_node, ScalarNode) or key_node.tag.endswith(":merge"):
                continue
            key = (key_node.tag, key_node.value)
            if key in seen:
                raise ConstructorError(None, None, f"key `{key_node.value}` appears twice in "
                                       "one mapping", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


    def construct_yaml_timestamp(self, node: ScalarNode) -> Any:
        """A date YAML reads as one (``2027-15-05`` matches its pattern) but no calendar has:
        located, not "cannot read as YAML: month must be in 1..12" with no line."""
        try:
            return super().construct_yaml_timestamp(node)
        except ValueError as exc:
            raise ConstructorError(None, None, f"`{node.value}` is not a date ({exc})",
                                   node.start_mark) from None


_StrictConstructor.add_constructor(  # type: ignore[type-var]  # stubs: a Loader only
    "tag:yaml.org,2002:timestamp", _StrictConstructor.construct_yaml_timestamp)


class SafeLoader(_GuardedComposer, _Parser, _StrictConstructor, Resolver):  # type: ignore[misc,valid-type]
    """The loader of every YAML input: safe types only, duplicate keys refused, structure
    limited while composing (see the module docstring)."""

    def __init__(self, stream: str) -> None:
        _Parser.__init__(self, stream)
        _GuardedComposer.__init__(self)
        _StrictConstructor.__init__(self)
        Resolver.__init__(self)


def load_yaml(text: str) -> Any:
    """Parse YAML text with :class:`SafeLoader` (raises ``yaml.YAMLError`` or ``ValueError``)."""
    loader = SafeLoader(text)
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()


#: The fix of a YAML error on a line indented with a tab: PyYAML's own words for the commonest
#: case ("found character that cannot start any token") do not name the tab.
TAB_FIX = ("YAML indents with spaces, never tabs: replace the tab(s) at the start of the line "
           "with spaces")


#: The fix of a date no calendar has (YAML reads ``2027-15-05`` as a date, then fails).
DATE_FIX = "write the date as YYYY-MM-DD (year, month, day)"


def _indented_by_tab(text: str, line: int) -> bool:
    """Whether line ``line`` (0-based) of ``text`` has a tab in its indentation."""
    lines = text.splitlines()
    if not 0 <= line < len(lines):
        return False
    row = lines[line]
    return "\t" in row[:len(row) - len(row.lstrip(" \t"))]


def read_document(path: Path) -> Any:
    """Parse a YAML, JSON or Excel (``.xlsx``) document; a missing, oversized or malformed
    file, or one past a structure limit, is an InputError naming the file and the place."""
    if path.suffix.lower() == ".xlsx":
        from models.scenario_workbook import read_scenario_workbook  # openpyxl: only when needed

        return read_scenario_workbook(path)
    text = read_text(path, "YAML or JSON document")
    if path.suffix.lower() == ".json":
        return parse_json(text, str(path))
    try:
        return load_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        limit = isinstance(exc, LimitError) or "nesting depth" in reason  # libyaml's own: 1,000
        kind = "past a limit" if limit else "invalid YAML"
        fix = ("simplify the file (docs/limits.md)" if limit
               else TAB_FIX if mark is not None and _indented_by_tab(text, mark.line)
               else DATE_FIX if "is not a date" in reason
               else "fix the syntax there")
        raise InputError([Problem(str(path), where, f"{kind}: {reason}", fix)]) from None
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4,300 digits
        raise InputError([Problem(str(path), "", f"cannot read as YAML: {exc}",
                                  "fix the value")]) from None
