"""The public record of a finished mix-net run (what ``sdp verify`` re-checks)."""

from __future__ import annotations

from typing import Any

from parties.mixnet.record_stream import EncodedList, record_parts
from parties.mixnet.state import MixnetAbort, ServerState


def public_record(state: ServerState) -> dict[str, Any]:
    """The run's public record as one dict (in-process runs, tests; a networked server writes
    ``record_fields`` to disk with ``record_stream.record_parts`` instead, the same bytes)."""
    fields = record_fields(state)
    subs = fields["submissions"]
    return {**fields, "submissions": subs.items() if isinstance(subs, EncodedList) else subs}


def publish_record(node: Any, msg_type: str, state: ServerState, extra: dict[str, Any]) -> str:
    """Publish the canonical CBOR of ``{**public_record(state), **extra}``, written to the
    transcript's blob file as it is encoded (never held whole: ``record_stream``)."""
    return node.publish(msg_type, record_parts({**record_fields(state), **extra}))


def record_fields(state: ServerState) -> dict[str, Any]:
    """The run's public record (input of
    ``mpc.mixnet.record_verifier.verify_record``; canonical-CBOR-able).

    Schema (elements are 32-byte ristretto255 encodings, scalars 32-byte little-endian):

    - ``session_id`` (str), ``params``: ``{k, t, servers, batches: [{name, width, bound,
      components}]}``;
    - ``dkg``: ``{commitments: {i: [t elements]}, pok: {i: {e, s}}, complaints: [{by,
      against, share | None}], qual: [i], pk, vks: {j: element}}``;
    - ``submissions``: ``[{client, batch, index, ct: {a: [c elements], b: [c elements]},
      proof: {e, s: [c scalars]}}]``, the included client parties' lists concatenated in cluster
      order; ``inputs``: ``[{party, count, users}]`` (which slice each client party sent, and
      how many users it declared; a party
      missing, or whose list the servers did not all receive identically, is left out and named
      in ``faults``); ``accepted``: ``{batch: [submission index]}``; ``rejected``: ``[{index,
      client, batch, reason}]``; ``users``: the declared users less the client ids with a
      rejected submission (``mpc.mixnet.params.users_whole``, the count the privacy gate uses);
    - ``mixes``: ``[{server, batches: {name: {output: Ciphertexts.to_obj(), proof:
      shuffle proof (see mpc.mixnet.schema) | None for < 2 messages}}}]`` in mixing order;
      ``faults``: skipped servers with reasons; ``evidence``: the signed proofs behind a
      fault of the input agreement (``parties.mixnet.inputs``): ``{server, report: {report,
      sig}}`` for a server that lied, ``{party, equivocation: [2 signed entries]}`` for a client
      party that signed two lists; ``inputs`` entries carry the party's ``sig`` of its list;
    - ``decryption_set``: the ``t`` servers whose shares decrypted (ascending);
      ``decryption``: ``{batch: {server in the set: {d: [w blobs of n elements], proof: {e,
      s}}}}`` with ``d = (lambda_j x_j) b`` (``lambda_j`` its Lagrange coefficient in the set);
    - ``plaintexts``: ``{batch: [row (list of int) | None if not a valid message]}`` in the
      order of the last mix output.

    ``submissions`` may be held as a ``record_stream.EncodedList`` (a server after screening).
    The caller adds ``estimate`` (the analyzer's published output) before publishing.
    """
    if state.delegated is not None:
        raise MixnetAbort(f"no public record here: server {state.delegated} combined the shares")
    if state.dkg is None or not state.plaintexts:
        raise MixnetAbort("no public record: the run did not complete")
    return {
        "session_id": state.cfg.session_id,
        "params": state.cfg.params(),
        "dkg": state.dkg.record,
        "submissions": state.submissions,
        "inputs": state.inputs,
        "users": state.users,
        "accepted": state.accepted,
        "rejected": state.rejected,
        "mixes": state.mixes,
        "faults": state.faults,
        "evidence": state.evidence,
        "decryption_set": state.dec_set,
        "decryption": state.decryption,
        "plaintexts": state.plaintexts,
    }
