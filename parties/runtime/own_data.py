"""One-box runs on the user's own file: give each client party its own part of it.

``sdp run PROTOCOL --data FILE --schema S.toml`` plays several data owners on one machine: the
file's data lines are split into contiguous parts, one per client party (the header, if the
schema says there is one, is repeated in every part), each part is written into that party's
private directory, and each party declares (publicly) how many data lines its part has: one
participant per line, counted before any value is parsed, so that the public user count does not
depend on what the schema keeps (a malformed line or a missing answer still takes part, as a
dummy record: ``protocols.datasets.source.with_dummies``). From there on a client party reads
only its own part, as it would on its own host. What the schema excluded (the data reports) is
for the operator only: it is shown on the launcher's terminal and never published.
"""

from __future__ import annotations

import gzip
from pathlib import Path

from protocols.datasets.readers import read_dataset
from protocols.datasets.report import DataReport
from protocols.datasets.schema import Schema

PART_NAME = "records.txt"


def _open_text(path: Path):  # noqa: ANN202 - a text stream
    with open(path, "rb") as f:
        magic = f.read(2)
    if magic == b"\x1f\x8b":
        return gzip.open(path, "rt", encoding="utf-8", newline="")
    return open(path, encoding="utf-8", newline="")  # noqa: SIM115


def _has_header(schema: Schema) -> bool:
    return bool(getattr(schema.format, "header", False))


def split_for_clients(
    path: Path, schema: Schema, clients: list[str], dest: dict[str, Path]
) -> tuple[dict[str, int], dict[str, DataReport]]:
    """Write client ``c``'s part of ``path`` to ``dest[c]``; returns each part's data lines (its
    public user count) and its data report (operator only; every line goes to one part)."""
    with _open_text(path) as f:
        header = f.readline() if _has_header(schema) else ""
        lines = f.readlines()
    kept: dict[str, int] = {}
    reports: dict[str, DataReport] = {}
    n = len(lines)
    for i, c in enumerate(clients):
        part = lines[i * n // len(clients) : (i + 1) * n // len(clients)]
        dest[c].parent.mkdir(parents=True, exist_ok=True)
        with open(dest[c], "w", encoding="utf-8", newline="") as out:
            out.write(header)
            out.writelines(part)
        data = read_dataset(dest[c], schema)
        kept[c] = int(data.report.rows_total)
        reports[c] = data.report
    return kept, reports


def count_rows(path: Path, schema: Schema) -> tuple[int, DataReport]:
    """Data lines of ``path`` (the public number of participants), and the file's data report
    (operator only)."""
    data = read_dataset(path, schema)
    return int(data.report.rows_total), data.report
