"""The parts of scripts/bench.py: one module per group of rows, plus the adapters (the only
calls into smarthole's internals), the cache arithmetic and the report."""
