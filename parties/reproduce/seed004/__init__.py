"""Seed 004 (shuffle-model survey) reproductions: Split-Mix summation on Adult."""
