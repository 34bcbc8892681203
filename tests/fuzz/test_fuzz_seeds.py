"""The fuzz tier: seeds 0-299 of the differential fuzzer (tests/fuzz/gen.py), each model compiled at -O0,
run under ASan/UBSan and compared with onnxruntime (onnx.reference where onnxruntime departs from the
spec). More seeds on demand: python bench/fuzz.py --seeds 0:10000 --jobs 2. The saved reproducers and
the shrinker: tests/host/test_fuzz_reproducers.py."""
import pytest

from fuzz.run import run_seed

from test_fuzz_reproducers import CI_SEEDS, OK, _refusal_ok  # noqa: F401


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", CI_SEEDS)
def test_seed(seed):
    r = run_seed(seed, opt="-O0")
    assert r.cls in OK or _refusal_ok(r), f"{r.line()}\nops: {', '.join(r.ops)}\n{r.detail}"


PATCH_SEEDS = range(0, 40)      # the "stage" kind: 32 of the first 60 have a stage; 72 s for 60 at -O0


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", PATCH_SEEDS)
def test_stage_seed_patched(seed, monkeypatch):
    """Patch-based execution forced on wherever the model has a first stage (aot/passes/patch.py):
    the outputs must still match onnxruntime, under ASan/UBSan."""
    import aot.compiler as compiler
    chosen = []
    real = compiler.choose_execution

    def spy(*args, **kw):
        graph, entry = real(*args, **kw)
        chosen.append(entry["patch"])
        return graph, entry
    monkeypatch.setattr(compiler, "choose_execution", spy)
    r = run_seed(seed, "stage", opt="-O0", patch="force")
    assert r.cls in OK or _refusal_ok(r), f"{r.line()}\nops: {', '.join(r.ops)}\n{r.detail}"
    assert chosen, "the compile did not reach the execution choice"


TILED_SEEDS = range(0, 40)      # 14 of them have a stage two columns wide; ~100 s at -O0


@pytest.mark.fuzz
@pytest.mark.parametrize("seed", TILED_SEEDS)
def test_stage_seed_tiled(seed):
    """Patch-based execution in tiles of rows and columns (a tiling drawn by the seed): the
    outputs must still match onnxruntime, under ASan/UBSan."""
    from fuzz.gen import generate
    from fuzz.run import tiling_for
    if tiling_for(generate(seed, "stage").model, seed) is None:
        pytest.skip("no stage two columns wide in this seed's model")
    r = run_seed(seed, "stage", opt="-O0", patch="tiles")
    assert r.cls in OK, f"{r.line()}\nops: {', '.join(r.ops)}\n{r.detail}"


def test_stage_seeds_are_mostly_patched():
    """The stage kind is worth its seeds: most of them give the patch search a stage to cut."""
    from fuzz.gen import generate
    from aot.compiler import run_passes
    from aot.frontend import import_model
    from aot.passes.layout import channels_last
    from aot.passes.patch import stage_cuts
    n = 0
    for seed in PATCH_SEEDS:
        case = generate(seed, "stage")
        g = run_passes(import_model(case.model.SerializeToString(), None, name="m", log=lambda m: None),
                       lambda m: None)
        n += bool(stage_cuts(channels_last(g)[0]))
    assert n >= len(PATCH_SEEDS) // 3, f"only {n} of {len(PATCH_SEEDS)} stage seeds have a stage"
