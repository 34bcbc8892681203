"""Differential fuzzing of aot against onnxruntime: random valid models (gen), the oracle that
compares outputs (oracle), the per-seed runner that classifies a seed (run) and the shrinker that
reduces a failing model to a small reproducer (shrink). The on-demand driver is bench/fuzz.py;
tests/test_fuzz.py runs a fixed seed set and the saved reproducers in tests/fuzz/regressions/."""
