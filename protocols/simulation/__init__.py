"""Simulations at scale: in process, without networked parties (``chunked``: memory-bounded,
on any executor)."""
