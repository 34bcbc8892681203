"""Schedule pipelines as data (aot/schedules/pipelines.py) and schedule traces (aot/tir/trace.py)."""
from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest

import aot
from aot.schedules import TraceMismatch, pipelines, replay, schedule
from aot.schedules import cpu, gpu, gpu_gemm, x86
from aot.schedules.pipelines import FirstOf, Step, first_of, pipeline_name, rule_name, rules_in, step
from aot.target import Target
from aot.tir.trace import from_json, to_json

from conftest import ROOT, SHARED

ME = __name__.rsplit(".", 1)[-1]      # rule names in traces are module.function
MODELS = os.path.join(SHARED, "models", "mlperf_tiny")
KWS = os.path.join(MODELS, "keyword_spotting", "kws_ref_model.tflite")
VWW_FLOAT = os.path.join(MODELS, "visual_wake_words", "vww_96_float.tflite")
VWW_INT8 = os.path.join(MODELS, "visual_wake_words", "vww_96_int8.tflite")
AD = os.path.join(MODELS, "anomaly_detection", "ad01_int8.tflite")
RESNET = os.path.join(MODELS, "image_classification", "pretrainedResnet_quant.tflite")
TARGETS = ("c", "c -mcpu=cortex-m4", "c -mcpu=cortex-m55", "cuda")


def _need(path):
    if not os.path.exists(path):
        pytest.skip(f"{path} not present")
    return path


def test_pipelines_are_lists_in_the_documented_order():
    assert [rule_name(r) for r in rules_in(pipelines.CORTEX_M)] == [
        "arm_gather.gather_windows", "arm_gather.gather_scratch", "arm_dw.depthwise_rows", "arm_dw.tensorize_depthwise",
        "arm_add.tensorize_adds", "arm_q15.tensorize_pointwise", "arm_float.float_tiles", "arm.tensorize_dots", "cpu.register_tiles",
        "cpu.flatten_indices", "cpu.unroll_short_loops", "arm_copy.vector_copies", "arm_float.fuse_multiply_adds"]
    assert isinstance(pipelines.CORTEX_M[0], FirstOf) and all(isinstance(s, Step) for s in pipelines.CORTEX_M[1:])
    assert rules_in(pipelines.HOST) == [x86.host_blocks, cpu.register_tiles, cpu.flatten_indices,
                                        cpu.unroll_short_loops]
    assert all(isinstance(s, Step) for s in pipelines.HOST)
    assert rules_in(pipelines.GPU) == [gpu_gemm.implicit_gemm, gpu.reduce_across_threads, gpu.tile_accumulation,
                                       gpu.bind_threads]
    assert pipelines.PIPELINES == {"cortex_m": pipelines.CORTEX_M, "host": pipelines.HOST, "gpu": pipelines.GPU}


@pytest.mark.parametrize("target,name", [("c", "host"), ("c -mcpu=cortex-m4", "cortex_m"),
                                         ("c -mcpu=cortex-m0", "cortex_m"), ("c -mcpu=cortex-m55", "cortex_m"),
                                         ("cuda", "gpu"), ("opencl", "gpu"), ("c -keys=cpu -mcpu=cortex-m4", "host")])
def test_pipeline_name_by_the_first_key(target, name):
    assert pipeline_name(Target(target)) == name


def test_every_step_has_a_reason():
    for p in pipelines.PIPELINES.values():
        for x in p:
            for s in pipelines.members(x):
                assert s.why.strip() and callable(s.rule), s
            if isinstance(x, FirstOf):
                assert x.why.strip()


def test_no_registry_is_left():
    """Rules are placed in pipeline lists, not registered; no rule tests another's claim."""
    assert not os.path.exists(os.path.join(ROOT, "aot", "schedules", "registry.py"))
    sched = os.path.join(ROOT, "aot", "schedules")
    for f in sorted(os.listdir(sched)):
        if f.endswith(".py"):
            src = open(os.path.join(sched, f)).read()
            for gone in ("wants_target", "rules_for", "rules_of", "first=True", "@register(", "from .registry",
                         '"schedule" in func.attrs', '"arm_cpu" in target.keys'):
                assert gone not in src, (f, gone)


def test_none_is_skipped_and_the_first_of_a_group_claims(monkeypatch):
    """A rule returning None leaves the kernel as it was; in a first_of group the first rule that
    returns a kernel claims it and the rest are not tried; a pass always runs; the trace names the
    rules that changed the kernel."""
    from aot.tir.stmt import PrimFunc, Seq
    seen = []

    def no(func, target):
        seen.append("no")

    def yes(func, target):
        seen.append("yes")
        return func.with_body(func.body, attrs=dict(func.attrs, schedule="yes"))

    def never(func, target):
        seen.append("never")
        return func

    def again(func, target):
        seen.append("again")
        return func.with_body(func.body, attrs=dict(func.attrs, again=True))

    monkeypatch.setitem(pipelines.PIPELINES, "host", [
        first_of(step(no, "n"), step(yes, "y"), step(never, "v"), why="t"), step(no, "n"), step(again, "a")])
    out = schedule(PrimFunc("k", [], Seq([]), 0, {}), Target("c"))
    assert seen == ["no", "yes", "no", "again"]
    assert out.attrs["schedule"] == "yes" and out.attrs["again"]
    assert [r for r, _ in out.attrs["trace"]["steps"]] == [f"{ME}.yes", f"{ME}.again"]


def _plain_and_scheduled(monkeypatch, model, target):
    """Every kernel the executor scheduled: (plain, scheduled), a repeated layer included (the
    structural memo hands it the first one's kernel and trace)."""
    import aot.executor.lowering as ex
    pairs, orig = [], ex.scheduled

    def spy(func, target, memo):
        out = orig(func, target, memo)
        pairs.append((func, out))
        return out

    monkeypatch.setattr(ex, "scheduled", spy)
    aot.compile(model, target=target)
    return pairs


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("model", [KWS, VWW_FLOAT, AD, RESNET], ids=os.path.basename)
def test_replay_gives_the_scheduled_kernel(monkeypatch, model, target):
    """replay(plain, trace) of every kernel of MLPerf Tiny models equals the scheduled kernel,
    from the trace as metadata.json would hold it (JSON and back)."""
    from aot.tir.legalize import legalize
    from aot.tir.structural import structural_key
    pairs = _plain_and_scheduled(monkeypatch, _need(model), target)
    assert pairs
    for plain, done in pairs:
        trace = from_json(json.loads(json.dumps(to_json(done.attrs["trace"]))))
        assert trace == done.attrs["trace"]
        again = legalize(replay(plain, trace))
        assert structural_key(again) == structural_key(done), plain.name


def test_replay_refuses_a_trace_of_another_kernel():
    """A trace whose primitives the rule does not apply to this kernel is refused, not replayed."""
    from aot.te.lower import lower_group
    from aot.frontend import import_model
    from aot.passes.fuse import fuse_ops
    g = import_model(_need(KWS), {})
    kernels = [lower_group(x, f"k{n}")[0] for n, x in enumerate(fuse_ops(g)) if not x.alias]
    t = Target("c -mcpu=cortex-m55")
    dots = next(schedule(k, t) for k in kernels if schedule(k, t).attrs.get("schedule") == "dot_s8 (mve)")
    trace = dots.attrs["trace"]
    other = next(k for k in kernels if schedule(k, t).attrs.get("schedule") == "dw_s8 (mve)")
    with pytest.raises(TraceMismatch):
        replay(other, trace)
    with pytest.raises(TraceMismatch):
        replay(other, dict(trace, steps=(("nowhere.rule", ()),)))


def _aot(*args):
    return subprocess.run([sys.executable, "-m", "aot.cli", *args], capture_output=True, text=True,
                          cwd=ROOT, env=dict(os.environ, PYTHONPATH=os.path.abspath(ROOT)))


def _metadata(path):
    with tarfile.open(path) as t:
        return json.load(t.extractfile("./metadata.json"))


def test_verbose_trace_and_info(tmp_path):
    """-v logs each kernel's rules and primitives; --trace records them in metadata.json (aot info
    prints them); without --trace the MLF is the one it always was."""
    m = _need(KWS)
    plain, traced = str(tmp_path / "a.tar"), str(tmp_path / "b.tar")
    r = _aot("compile", m, "-o", plain, "--target", "c -mcpu=cortex-m55", "-v")
    assert r.returncode == 0, r.stderr
    assert re.search(r"schedule: tvmgen_default_fused_qconv_1: pipeline cortex_m\n"
                     r"  arm_dw.tensorize_depthwise: pack_layout\(1, 0, 64\); tensorize\(oc_p, 'dw_s8'\)", r.stderr)
    assert "  arm.tensorize_dots: reorder([rh, rw, rc]); tensorize(rc, 'dot_s8')" in r.stderr
    r = _aot("compile", m, "-o", traced, "--target", "c -mcpu=cortex-m55", "--trace")
    assert r.returncode == 0, r.stderr
    meta = _metadata(traced)["modules"]["default"]["aot"]
    traces = meta["schedule_traces"]
    assert set(traces) <= set(meta["kernels"]) and traces["tvmgen_default_fused_qconv_1"]["pipeline"] == "cortex_m"
    assert "schedule_traces" not in _metadata(plain)["modules"]["default"]["aot"]
    info = _aot("info", traced)
    assert info.returncode == 0, info.stderr
    assert "    tvmgen_default_fused_qconv_1: dw_s8 (mve)\n      arm_dw.tensorize_depthwise: pack_layout(1, 0, 64)" \
        in info.stdout
    assert "arm_dw.tensorize_depthwise" not in _aot("info", plain).stdout
    # the same MLF but for its metadata.json
    with tarfile.open(plain) as a, tarfile.open(traced) as b:
        files = {x.name: a.extractfile(x).read() for x in a if x.isfile()}
        again = {x.name: b.extractfile(x).read() for x in b if x.isfile()}
    assert files.keys() == again.keys()
    assert [k for k in files if files[k] != again[k]] == ["./metadata.json"]


def test_a_repeated_layer_carries_its_trace(monkeypatch):
    """The executor schedules a repeated layer once (its structural memo): each copy has the trace
    of the first, and every kernel of the plan has one."""
    from aot.tir.structural import structural_key
    pairs = _plain_and_scheduled(monkeypatch, _need(VWW_INT8), "c -mcpu=cortex-m55")
    groups = {}
    for plain, done in pairs:
        groups.setdefault(structural_key(plain), []).append(done.attrs["trace"])
    repeated = [ts for ts in groups.values() if len(ts) > 1]
    assert repeated and all(t == ts[0] and t["steps"] for ts in repeated for t in ts)
    from aot.compiler import schedule_traces
    res = aot.compile(_need(VWW_INT8), target="c -mcpu=cortex-m55")
    assert set(schedule_traces(res.plan)) == {c.symbol for c in res.plan.calls if getattr(c, "func", None)}


def test_default_mlf_has_no_trace():
    res = aot.compile(_need(KWS), target="c -mcpu=cortex-m4")
    with tarfile.open(fileobj=io.BytesIO(res.tar)) as t:
        meta = json.load(t.extractfile("./metadata.json"))
    assert "schedule_traces" not in meta["modules"]["default"]["aot"]
    traced = aot.compile(_need(KWS), target="c -mcpu=cortex-m4", trace=True)
    with tarfile.open(fileobj=io.BytesIO(traced.tar)) as t:
        meta = json.load(t.extractfile("./metadata.json"))
    assert meta["modules"]["default"]["aot"]["schedule_traces"]


def test_rules_take_func_and_target():
    """Every rule is rule(func, target) -> PrimFunc | None."""
    import inspect
    for p in pipelines.PIPELINES.values():
        for r in rules_in(p):
            assert list(inspect.signature(r).parameters)[:2] == ["func", "target"], rule_name(r)
