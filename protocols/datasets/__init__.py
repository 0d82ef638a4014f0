"""Datasets: the bundled ones used by the reproductions, and the user's own under a public schema.

``categorical`` loads and preprocesses the bundled datasets (Adult, Census-Income, Kosarak).
Bring-your-own data (``docs/data.md``): ``schema`` (the public TOML schema, fixed before the data
is seen; its types and canonical writer in ``schema_model``), ``readers`` (a file plus a schema ->
kept records chunk by chunk and a ``DataReport`` of every excluded row; built on ``lines``,
``csv_block``, ``sets_block``, ``decode``, ``report``), ``infer`` and ``cli`` (``sdp data schema``,
``sdp data check``).
"""
