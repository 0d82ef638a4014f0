"""``sdp data``: propose a schema from a file, check a file against a schema.

    sdp data schema FILE [--kind categorical|setvalued|numeric] [--delimiter D]
                         [--header | --no-header] [--column C] [--max-values N] [-o OUT]
    sdp data check FILE --schema SCHEMA.toml [--json] [--examples N]

``schema`` prints a proposed schema (TOML) on stdout and a warning on stderr: a domain inferred
from private data is itself a disclosure, to be reviewed and replaced by choices fixed in
advance (``docs/data.md``). ``check`` reads the whole file as a run would and reports rows and
values outside the schema: exit 0 if every row is kept, 1 if some are excluded, 2 if the schema
is malformed or the file unreadable. Every error is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from protocols.datasets.report import DataFileError
from protocols.datasets.schema_model import KINDS, SchemaError

PROG = "sdp data"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse's own convention)
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    ap = _Parser(prog=PROG, description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    s = sub.add_parser("schema", help="propose a schema from a file (a disclosure: review it)")
    s.add_argument("file")
    s.add_argument("--kind", choices=KINDS, default=None, help="default: guessed from the file")
    s.add_argument("--delimiter", default=None, help="field (or item) separator; 'tab' for TAB")
    h = s.add_mutually_exclusive_group()
    h.add_argument("--header", dest="header", action="store_true", default=None)
    h.add_argument("--no-header", dest="header", action="store_false")
    s.add_argument("--column", default=None, help="numeric kind: the column (name or number)")
    s.add_argument("--max-values", type=int, default=1000, help="most values listed per column")
    s.add_argument("-o", "--output", default=None, help="write the TOML here instead of stdout")
    c = sub.add_parser("check", help="report rows and values outside a schema")
    c.add_argument("file")
    c.add_argument("--schema", required=True)
    c.add_argument("--json", action="store_true", help="print the full report as JSON")
    c.add_argument("--examples", type=int, default=10, help="offending lines shown (default 10)")
    return ap


def _schema(a: argparse.Namespace) -> int:
    from protocols.datasets.infer import WARNING, infer_schema, notes_text, proposal_text

    if a.max_values < 1:
        raise ValueError("--max-values must be at least 1")
    delim = {"tab": "\t", "\\t": "\t"}.get(a.delimiter, a.delimiter)
    if delim is not None and len(delim) != 1:
        raise ValueError(f"--delimiter must be one character or 'tab', got {a.delimiter!r}")
    schema, notes = infer_schema(a.file, a.kind, delim, a.header, a.column, a.max_values)
    text = proposal_text(schema)
    if a.output:
        Path(a.output).write_text(text)
    else:
        sys.stdout.write(text)
    print(f"{PROG}: {WARNING}", file=sys.stderr)
    print(notes_text(notes), file=sys.stderr)
    if a.output:
        print(
            f"{PROG}: proposed schema written to {a.output}; review it before any run",
            file=sys.stderr,
        )
    return 0


def _check(a: argparse.Namespace) -> int:
    from protocols.datasets.readers import DataReader
    from protocols.datasets.schema import load_schema

    if a.examples < 0:
        raise ValueError("--examples must be >= 0")
    schema = load_schema(a.schema)
    reader = DataReader(a.file, schema, max_examples=a.examples)
    for _ in reader:
        pass
    rep = reader.report
    if rep.rows_total == 0:
        raise DataFileError(f"{a.file}: no data rows (the file is empty after any header line)")
    if a.json:
        print(json.dumps(rep.to_dict(), indent=2))
    else:
        print(f"{a.file}: {rep.summary()}")
        for line in rep.lines():
            print(line)
    return 0 if rep.rows_excluded == 0 else 1


def main(argv: list[str]) -> int:
    """Entry point of ``sdp data``: 0 ok, 1 rows excluded (check), 2 on any error."""
    a = _parser().parse_args(argv)
    try:
        return _schema(a) if a.cmd == "schema" else _check(a)
    except (SchemaError, DataFileError) as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
    except (OSError, ValueError) as exc:
        print(f"{PROG} {a.cmd}: {exc}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
