"""Benchmarks: speed and quality measured on real corpora; results go to RESULTS.md."""
