"""Seed 000 reproduction: 1-way marginals (runs, tables, report, reference values) and k-way marginals/SGD."""
