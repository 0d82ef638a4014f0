"""Where a workload's records come from in a bring-your-own-data run.

A run on the user's own data carries two parameters (``sdp run PROTOCOL --data FILE --schema
S.toml``):

* ``schema``: the public schema's TOML text (it is in the public cluster file, so every party
  and the verifier build the protocol from the same public parameters, and the cluster digest in
  every transcript binds it);
* ``data``: a path to records. At the launcher it is the whole file (to split among the client
  parties and to evaluate the estimate afterwards); at a client party it is *its own* file (its
  ``[[party]]`` section names it); the analyzer, the shufflers and the verifier have none.

Every protocol parameter comes from the schema and the run parameters, never from the records:
the number of users ``users`` is a run parameter (the sum of the client parties' declared
counts: the *data lines* of their files, one participant per line, whatever the schema makes of
the line). :func:`records_for` reads the records a party holds (or none); every excluded row
(malformed, missing, out of domain) still takes part as a *dummy record* drawn independently of
the row (:func:`with_dummies`), so that the number of reports, and everything computed from
it, is the same whether a person's line is well-formed or not. What was excluded (the data
report) stays with the party's operator: it is never published.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from protocols.datasets.readers import (
    CategoricalData,
    Data,
    NumericData,
    SetValuedData,
    read_dataset,
)
from protocols.datasets.report import DataReport
from protocols.datasets.schema import (
    CategoricalSchema,
    NumericSchema,
    Schema,
    SchemaError,
    SetValuedSchema,
    parse_schema,
)
from protocols.rng import experiment_rng, secure_rng

SCHEMA_PARAM = "schema"
DATA_PARAM = "data"
KIND_OF = {CategoricalSchema: "categorical", SetValuedSchema: "setvalued", NumericSchema: "numeric"}


def schema_of(params: dict[str, Any], needs: str | None = None, who: str = "") -> Schema | None:
    """The run's public schema (None in a run on bundled data); ``needs`` checks its kind."""
    text = params.get(SCHEMA_PARAM)
    if text is None:
        if params.get(DATA_PARAM) is not None:
            raise ValueError(f"{who}: --data needs --schema (the public schema of the file)")
        return None
    schema = parse_schema(str(text), "the run's schema")
    kind = KIND_OF[type(schema)]
    if needs is not None and kind != needs:
        raise ValueError(f"{who} needs a {needs} schema, got a {kind} one")
    check_run_domains(schema, who)
    return schema


MAX_RUN_DOMAIN = 1 << 24  # values of one attribute (items of a universe) a run can count


def check_run_domains(schema: Schema, who: str) -> None:
    """Refuse domains a run cannot use: an attribute with a single value (it publishes nothing),
    or more values than the analyzer's counts hold (``MAX_RUN_DOMAIN``)."""
    if isinstance(schema, CategoricalSchema):
        sizes = dict(zip(schema.attribute_names, schema.domain_sizes, strict=True))
    elif isinstance(schema, SetValuedSchema):
        sizes = {"items": int(schema.d)}
    else:
        return
    for name, k in sizes.items():
        if not 2 <= k <= MAX_RUN_DOMAIN:
            raise ValueError(
                f"{who}: the schema's {name!r} has {k} values; a run needs between 2 and "
                f"{MAX_RUN_DOMAIN} (a single value publishes nothing; a larger domain: bin it "
                "or use a coarser code list)"
            )


@dataclass
class OwnRecords:
    """The records one party holds under the schema, and what was excluded before randomizing."""

    data: CategoricalData | SetValuedData | NumericData | None
    report: DataReport | None

    @property
    def n(self) -> int:
        return 0 if self.data is None else int(self.data.n)


def dummy_rng(params: dict[str, Any]) -> np.random.Generator:
    """The dummies' randomness: CSPRNG-seeded, or from ``seed`` in a seeded simulation."""
    seed = params.get("seed")
    if seed is None:
        return secure_rng()
    return experiment_rng(int(seed), "own-data", "dummies")


DUMMY_BLOCK = 1 << 16  # dummy values are drawn for every row position, this many at a time


def _at_positions(
    total: int, rows: np.ndarray, kept: np.ndarray, draw: Callable[[int], np.ndarray]
) -> np.ndarray:
    """``total`` rows in file order: the kept values at ``rows``, elsewhere ``draw(m)`` (values
    drawn for *every* position, block by block, so that a row's dummy depends on its position
    and the randomness only, never on which other rows were excluded)."""
    out = np.empty((total, *kept.shape[1:]), dtype=kept.dtype)
    for a in range(0, total, DUMMY_BLOCK):
        b = min(total, a + DUMMY_BLOCK)
        out[a:b] = draw(b - a)
    out[rows] = kept
    return out


def with_dummies(data: Data, rng: np.random.Generator) -> Data:
    """``data`` with one dummy record at the place of every excluded row (``report.rows_total``
    records in all, in file order): a uniform value of every attribute (categorical), an empty
    transaction (set-valued), a uniform value in [0, 1] (numeric). A dummy depends on nothing
    in the file but the row's existence and position; every kept record keeps its row's
    position, so global user indices, and every public grouping of them, do not depend on which
    rows were excluded. The estimate is then of the file with each excluded row replaced by a
    dummy."""
    total = data.report.rows_total
    if data.n > total:
        raise ValueError(f"{data.report.path}: {data.n} records kept from {total}")
    if data.n == total:
        return data
    rows = data.rows
    if rows is None or rows.shape != (data.n,):
        raise ValueError(f"{data.report.path}: the kept records' row positions are not known")
    if isinstance(data, CategoricalData):
        sizes = np.asarray(data.schema.domain_sizes, dtype=np.int64)
        recs = _at_positions(
            total,
            rows,
            np.asarray(data.records, dtype=np.int64),
            lambda m: (rng.random((m, sizes.size)) * sizes).astype(np.int64),
        )
        return replace(data, records=recs, rows=np.arange(total, dtype=np.int64))
    if isinstance(data, NumericData):
        values = _at_positions(total, rows, np.asarray(data.values, np.float64), rng.random)
        return replace(data, values=values, rows=np.arange(total, dtype=np.int64))
    sizes = np.zeros(total, dtype=np.int64)
    sizes[rows] = np.diff(data.indptr)
    indptr = np.zeros(total + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    return replace(data, indptr=indptr, rows=np.arange(total, dtype=np.int64))


def records_for(params: dict[str, Any], schema: Schema) -> OwnRecords:
    """Read ``params["data"]`` (this party's file) with the schema, every excluded row replaced
    by a dummy record (:func:`with_dummies`); none if there is no file."""
    path = params.get(DATA_PARAM)
    if path is None:
        return OwnRecords(None, None)
    data = read_dataset(str(path), schema)
    return OwnRecords(with_dummies(data, dummy_rng(params)), data.report)


def declared_users(params: dict[str, Any], who: str) -> int:
    """The public number of users of a bring-your-own-data run (``users``, required)."""
    if params.get("users") is None:
        raise ValueError(
            f"{who}: a run on your own data needs the public number of users (--users N, the "
            "sum of the client parties' declared counts: their files' data lines); it is never "
            "read from what the schema makes of the records"
        )
    n = int(params["users"])
    if n < 2:
        raise ValueError(f"{who}: users must be >= 2, got {n}")
    return n


def categorical_records(own: OwnRecords, schema: CategoricalSchema) -> np.ndarray:
    """(n, d) int64 value indices of the party's records (0 rows without a file)."""
    if own.data is None:
        return np.zeros((0, len(schema.domain_sizes)), dtype=np.int64)
    assert isinstance(own.data, CategoricalData)
    return np.asarray(own.data.records, dtype=np.int64)


__all__ = [
    "DATA_PARAM",
    "SCHEMA_PARAM",
    "OwnRecords",
    "SchemaError",
    "categorical_records",
    "check_run_domains",
    "declared_users",
    "dummy_rng",
    "with_dummies",
    "records_for",
    "schema_of",
]
