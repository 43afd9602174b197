"""Benchmarks: run by hand (`make bench-packing`), never part of the test suite; they print numbers."""
