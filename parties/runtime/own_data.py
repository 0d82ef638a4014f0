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

from pathlib import Path
from typing import BinaryIO

import numpy as np

from protocols.datasets.lines import RECORD_END, open_binary, read_pieces, record_ends
from protocols.datasets.readers import read_dataset
from protocols.datasets.report import DataReport
from protocols.datasets.schema import Schema

PART_NAME = "records.txt"


def _has_header(schema: Schema) -> bool:
    return bool(getattr(schema.format, "header", False))


def _copy_records(path: Path, header: bool, bounds: list[int], outs: list[BinaryIO]) -> int:
    """Copy the file's records, cut by the reader's own record parser
    (:data:`protocols.datasets.lines.RECORD_END`), byte for byte: data rows
    ``bounds[i]..bounds[i+1]-1`` to ``outs[i]``, the header line (if any) to every part first.
    Returns the number of data rows copied."""
    stream, _ = open_binary(path)
    rec = -1 if header else 0  # the record the next byte belongs to (-1: the header line)
    head = bytearray()
    open_record = False  # bytes of record ``rec`` were copied, its end not yet
    try:
        for piece in read_pieces(stream, str(path)):
            ends = record_ends(piece)
            pos, k = 0, 0  # k: index in ends of the next record end at or after pos
            while pos < len(piece):
                if rec < 0:
                    stop = int(ends[0]) + 1 if ends.size else len(piece)
                    head += piece[pos:stop]
                    if ends.size:
                        rec, k = 0, 1
                        for out in outs:
                            out.write(head)
                    pos = stop
                    continue
                part = int(np.searchsorted(bounds, rec, side="right")) - 1
                if part >= len(outs):
                    raise ValueError(f"{path}: more data rows than the {bounds[-1]} counted")
                left = bounds[part + 1] - rec  # this part's records still to copy
                last = k + left - 1
                stop = int(ends[last]) + 1 if last < ends.size else len(piece)
                done = min(left, ends.size - k)
                outs[part].write(piece[pos:stop])
                open_record = piece[stop - 1] != RECORD_END
                rec += done
                k += done
                pos = stop
    finally:
        stream.close()
    if head and rec < 0:  # a header line without its line end
        for out in outs:
            out.write(head)
        rec = 0
    return rec + int(open_record)


def split_for_clients(
    path: Path, schema: Schema, clients: list[str], dest: dict[str, Path]
) -> tuple[dict[str, int], dict[str, DataReport]]:
    """Write client ``c``'s part of ``path`` to ``dest[c]``; returns each part's data lines (its
    public user count) and its data report (operator only; every line goes to one part).

    The launcher's count (:func:`count_rows`), this split and each client party's reader cut
    the file into rows at the same bytes, so that the per-client counts and the public n do not
    depend on any field's content (a carriage return or a quoted line break is data)."""
    n, _ = count_rows(path, schema)
    bounds = [i * n // len(clients) for i in range(len(clients) + 1)]
    for c in clients:
        dest[c].parent.mkdir(parents=True, exist_ok=True)
    outs = [open(dest[c], "wb") for c in clients]  # noqa: SIM115 (closed below)
    try:
        copied = _copy_records(path, _has_header(schema), bounds, outs)
    finally:
        for out in outs:
            out.close()
    if copied != n:
        raise ValueError(f"{path}: {copied} data rows copied, {n} counted")
    kept: dict[str, int] = {}
    reports: dict[str, DataReport] = {}
    for i, c in enumerate(clients):
        data = read_dataset(dest[c], schema)
        kept[c] = int(data.report.rows_total)
        reports[c] = data.report
        if kept[c] != bounds[i + 1] - bounds[i]:
            raise ValueError(
                f"{c}: its part of {path} reads as {kept[c]} rows, {bounds[i + 1] - bounds[i]} "
                "were given to it"
            )
    return kept, reports


def count_rows(path: Path, schema: Schema) -> tuple[int, DataReport]:
    """Data lines of ``path`` (the public number of participants), and the file's data report
    (operator only)."""
    data = read_dataset(path, schema)
    return int(data.report.rows_total), data.report
