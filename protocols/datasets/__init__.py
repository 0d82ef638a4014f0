"""Bundled datasets (Adult, Census-Income, Kosarak; loaders and preprocessing) used by the reproductions."""
