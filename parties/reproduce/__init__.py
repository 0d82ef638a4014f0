"""Reproductions of the source papers' experiments (``sdp reproduce SEED``)."""
