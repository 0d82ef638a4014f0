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
counts). :func:`records_for` reads the records a party holds (or none) and says how many rows
were excluded before randomization and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from protocols.datasets.readers import CategoricalData, NumericData, SetValuedData, read_dataset
from protocols.datasets.report import DataReport
from protocols.datasets.schema import (
    CategoricalSchema,
    NumericSchema,
    Schema,
    SchemaError,
    SetValuedSchema,
    parse_schema,
)

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
    return schema


@dataclass
class OwnRecords:
    """The records one party holds under the schema, and what was excluded before randomizing."""

    data: CategoricalData | SetValuedData | NumericData | None
    report: DataReport | None

    @property
    def n(self) -> int:
        return 0 if self.data is None else int(self.data.n)


def records_for(params: dict[str, Any], schema: Schema) -> OwnRecords:
    """Read ``params["data"]`` (this party's file) with the schema; none if there is no file."""
    path = params.get(DATA_PARAM)
    if path is None:
        return OwnRecords(None, None)
    data = read_dataset(str(path), schema)
    return OwnRecords(data, data.report)


def declared_users(params: dict[str, Any], who: str) -> int:
    """The public number of users of a bring-your-own-data run (``users``, required)."""
    if params.get("users") is None:
        raise ValueError(
            f"{who}: a run on your own data needs the public number of users (--users N, the "
            "sum of the client parties' declared counts); it is never read from the data"
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
    "declared_users",
    "records_for",
    "schema_of",
]
