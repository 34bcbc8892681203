"""Differential fuzzing of aot against onnxruntime: random valid models (gen), the oracle that
compares outputs (oracle), the per-seed runner that classifies a seed (run) and the shrinker that
reduces a failing model to a small reproducer (shrink). The on-demand driver is bench/fuzz.py;
tests/fuzz/test_fuzz_seeds.py runs a fixed seed set (the fuzz tier), tests/host/test_fuzz_reproducers.py
the saved reproducers in tests/fuzz/regressions/."""
