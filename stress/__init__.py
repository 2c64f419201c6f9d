"""Load and fault scripts (issue 14, part 3): each is `python -m stress.NAME`, each has a
small version in tests/test_stress.py, and the figures are in benchmarks/RESULTS.md."""
