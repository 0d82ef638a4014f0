"""What happened to every row of a data file: kept, or excluded and why (the ``DataReport``).

Every data line of a file is accounted for exactly once: ``rows_total == rows_kept +
sum(excluded.values())``. A row is excluded for the first of these that applies:

* ``malformed``: wrong number of fields, an unparsable number, a quote left open, an item
  outside the universe (unless the schema drops such items), a duplicate item (unless merged),
  more items than ``max_items``, a line longer than the reader's limit;
* ``missing``: a missing-value token in an attribute whose policy is ``reject`` (the default),
  or an empty transaction when ``empty = "reject"``;
* ``out_of_domain``: a value outside its attribute's domain under ``reject``.

Values mapped to the schema's explicit ``other`` value, clipped values and dropped or merged
items stay in their (kept) rows and are counted per attribute. The report is the data owner's:
a run never publishes it (each excluded row takes part as a dummy record and the public user
count is the file's data lines, ``protocols.datasets.source``). ``public()`` gives the counts
without line numbers or values; ``examples`` (line numbers, offending values) are shown by
``sdp data check`` only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

EXCLUSION_KINDS = ("malformed", "missing", "out_of_domain")
# per-attribute value counters (categorical and numeric); every value is counted on each row
# that has the right number of fields, whatever else is wrong with the row
VALUE_COUNTERS = (
    "missing",
    "out_of_domain",
    "unparsable",
    "missing_mapped_to_other",
    "out_of_domain_mapped_to_other",
    "clipped",
)
ITEM_COUNTERS = ("items_outside", "items_dropped", "duplicates_merged", "rows_with_dropped_items")


class DataFileError(Exception):
    """A data file that cannot be read at all (absent, undecodable compression, bad header).

    ``str()`` is one line naming the file (and the line when there is one)."""


@dataclass(frozen=True)
class Example:
    """One offending line: its 1-based line number in the (decompressed) file and the reason."""

    line: int
    kind: str  # malformed | missing | out_of_domain | kept (a kept row whose value was changed)
    reason: str


@dataclass
class DataReport:
    """Counts of kept and excluded rows of one file read with one schema."""

    path: str
    kind: str
    schema_sha256: str
    rows_total: int = 0
    rows_kept: int = 0
    excluded: dict[str, int] = field(default_factory=lambda: dict.fromkeys(EXCLUSION_KINDS, 0))
    reasons: dict[str, int] = field(default_factory=dict)  # malformed rows by reason
    attributes: dict[str, dict[str, int]] = field(default_factory=dict)
    items: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ITEM_COUNTERS, 0))
    compression: str = "none"
    header_lines: int = 0
    examples: list[Example] = field(default_factory=list)
    max_examples: int = 10

    @property
    def rows_excluded(self) -> int:
        return sum(self.excluded.values())

    @property
    def values_changed(self) -> int:
        """Kept values mapped to ``other`` or clipped, plus dropped/merged items."""
        n = sum(
            c[k]
            for c in self.attributes.values()
            for k in ("missing_mapped_to_other", "out_of_domain_mapped_to_other", "clipped")
        )
        return n + self.items["items_dropped"] + self.items["duplicates_merged"]

    def check(self) -> None:
        """AssertionError unless every row is accounted for exactly once."""
        assert self.rows_total == self.rows_kept + self.rows_excluded, self
        assert sum(self.reasons.values()) == self.excluded["malformed"], self

    # ---- accumulation (used by the readers) ----------------------------------------------

    def exclude(self, kind: str, count: int, reason: str | None = None) -> None:
        self.excluded[kind] += int(count)
        if kind == "malformed" and count:
            key = reason or "malformed"
            self.reasons[key] = self.reasons.get(key, 0) + int(count)

    def count_value(self, attribute: str, counter: str, count: int) -> None:
        c = self.attributes.setdefault(attribute, dict.fromkeys(VALUE_COUNTERS, 0))
        c[counter] += int(count)

    def wants_examples(self) -> int:
        return max(0, self.max_examples - len(self.examples))

    def add_examples(self, found: list[Example]) -> None:
        """Add offending lines of one block (any order); keeps the first ``max_examples``."""
        room = self.wants_examples()
        if room:
            self.examples.extend(sorted(found, key=lambda e: e.line)[:room])

    # ---- output --------------------------------------------------------------------------

    def public(self) -> dict[str, Any]:
        """Counts only (no line numbers, no values), for the operator: never published."""
        out: dict[str, Any] = {
            "kind": self.kind,
            "schema_sha256": self.schema_sha256,
            "rows_total": self.rows_total,
            "rows_kept": self.rows_kept,
            "excluded_before_randomization": dict(self.excluded),
            "malformed_by_reason": dict(sorted(self.reasons.items())),
        }
        if self.kind == "setvalued":
            out["items"] = dict(self.items)
        else:
            out["values_by_attribute"] = {a: dict(c) for a, c in self.attributes.items()}
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything, for the data owner (``sdp data check --json``)."""
        out = self.public()
        out["path"] = self.path
        out["compression"] = self.compression
        out["examples"] = [
            {"line": e.line, "kind": e.kind, "reason": e.reason} for e in self.examples
        ]
        return out

    def summary(self) -> str:
        """One line: rows read, kept, and excluded by kind."""
        parts = [f"{self.excluded[k]:,} {k.replace('_', ' ')}" for k in EXCLUSION_KINDS]
        line = (
            f"{self.rows_total:,} rows: {self.rows_kept:,} kept, {self.rows_excluded:,} excluded "
            f"before randomization ({', '.join(parts)})"
        )
        n = self.values_changed
        if n:
            line += f"; {n:,} value{'' if n == 1 else 's'} changed in kept rows as the schema says"
        return line

    def lines(self) -> list[str]:
        """Human-readable detail under :meth:`summary`."""
        out = []
        for reason, n in sorted(self.reasons.items(), key=lambda kv: -kv[1]):
            out.append(f"  malformed: {n:,} {reason}")
        for name, c in self.attributes.items():
            shown = [f"{v:,} {k.replace('_', ' ')}" for k, v in c.items() if v]
            if shown:
                out.append(f"  attribute {name!r}: {', '.join(shown)}")
        if self.kind == "setvalued":
            shown = [f"{v:,} {k.replace('_', ' ')}" for k, v in self.items.items() if v]
            if shown:
                out.append(f"  items: {', '.join(shown)}")
        if self.examples:
            out.append("first offending lines:")
            out += [
                f"  line {e.line}: {e.kind.replace('_', ' ')}: {e.reason}" for e in self.examples
            ]
        return out
