"""The implicit-GEMM GPU schedule (aot/schedules/gpu_gemm.py): register tiles per thread, both
operands staged in shared memory, padded windows run whole over the staged zeros. Its kernels
run on PoCL against onnxruntime and compile with nvcc; the structure tests check what makes it
faster than one output per thread (loads per multiply-add), which a CPU can count."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import init, make_model, vi
from test_gpu import _lowered, check_opencl, gpu, members, nvcc, opencl

R = np.random.default_rng(11)


def _conv_nodes(cin, cout, hw, k, stride, pad, act="Relu", bias=True):
    oh = (hw + 2 * pad - k) // stride + 1
    ins = ["x", "w", "b"] if bias else ["x", "w"]
    nodes = [helper.make_node("Conv", ins, ["c" if act else "y"], pads=[pad] * 4, strides=[stride] * 2)]
    if act:
        nodes.append(helper.make_node(act, ["c"], ["y"]))
    inits = [init("w", R.standard_normal((cout, cin, k, k)).astype(np.float32))]
    if bias:
        inits.append(init("b", R.standard_normal(cout).astype(np.float32)))
    return nodes, [vi("x", [1, cin, hw, hw])], [vi("y", [1, cout, oh, oh])], inits


CONVS = {
    "3x3_pad1": (32, 64, 28, 3, 1, 1),
    "3x3_stride2": (16, 32, 29, 3, 2, 1),
    "1x1": (64, 128, 14, 1, 1, 0),
    "5x5_pad2_no_bias": (8, 64, 16, 5, 1, 2),
    "7x7_stride2_pad3_cin3": (3, 64, 32, 7, 2, 3),
    "3x3_cin20_tail_stage": (20, 64, 14, 3, 1, 1),      # stages of 16 input channels: the second holds 4
}


def _conv(name):
    cin, cout, hw, k, stride, pad = CONVS[name]
    bias = "no_bias" not in name
    nodes, ins, outs, inits = _conv_nodes(cin, cout, hw, k, stride, pad, act="Relu" if bias else None, bias=bias)
    return make_model(nodes, ins, outs, inits), {"x": R.standard_normal((1, cin, hw, hw)).astype(np.float32)}


def _matmul(m, k, n):
    model = make_model([helper.make_node("MatMul", ["a", "b"], ["y"])], [vi("a", [m, k])], [vi("y", [m, n])],
                       [init("b", R.standard_normal((k, n)).astype(np.float32))])
    return model, {"a": R.standard_normal((m, k)).astype(np.float32)}


def _shared(func):
    from aot.tir.stmt import Allocate, walk_stmts
    return [s.buffer for s in walk_stmts(func.body) if isinstance(s, Allocate)]


def _innermost_reduction(func):
    """The body of the innermost loop: the unrolled lanes' multiply-adds."""
    from aot.tir.stmt import For, walk_stmts
    loops = [s for s in walk_stmts(func.body) if isinstance(s, For) and s.kind == "serial"
             and not any(isinstance(x, For) for x in walk_stmts(s.body))]
    return max(loops, key=lambda lp: len(list(walk_stmts(lp.body)))).body


def test_a_padded_3x3_conv_takes_4x4_register_tiles_over_whole_windows():
    """64 output channels x 28 positions: 16x7 threads, each 4 channels x 4 positions; a stage of
    16 input channels. A reduction step loads 4 weights and 4 inputs for 16 multiply-adds (one
    output per thread: 2 loads each), and no loop bound depends on a thread."""
    from aot.tir.expr import Load, Var, walk
    from aot.tir.stmt import For, Store, own_exprs, walk_stmts
    f = _lowered(*_conv_nodes(32, 64, 28, 3, 1, 1))
    assert f.attrs["schedule"] == "implicit gemm: 64x28 outputs a block, 4x4 a thread, 16 of 32 a stage"
    assert f.attrs["launch"] == ((1, 1, 28), (7, 16, 1))
    bufs = {b.scope: b for b in _shared(f)}
    acc = [b for b in _shared(f) if b.scope == "local"]
    assert [b.size for b in acc] == [16]
    assert sorted(b.size for b in _shared(f) if b.scope == "shared") == [16 * 3 * 30, 64 * 16 * 9]
    body = _innermost_reduction(f)
    stores = [s for s in walk_stmts(body) if isinstance(s, Store)]
    assert len(stores) == 16 and all(s.buffer is acc[0] for s in stores)
    loads = {ld.key() for s in stores for e in own_exprs(s) for ld in walk(e)
             if isinstance(ld, Load) and ld.buffer.scope == "shared"}
    assert len(loads) == 8
    threads = {id(lp.var) for lp in walk_stmts(f.body) if isinstance(lp, For) and lp.kind == "thread_binding"}
    assert not [lp.var.name for lp in walk_stmts(f.body) if isinstance(lp, For) and lp.kind == "serial"
                and any(isinstance(v, Var) and id(v) in threads for e in (lp.min, lp.extent) for v in walk(e))]
    assert "local" in bufs and "shared" in bufs


def test_a_matmul_takes_register_tiles_on_both_axes():
    f = _lowered([helper.make_node("MatMul", ["a", "b"], ["y"])], [vi("a", [64, 96])], [vi("y", [64, 128])],
                 [init("b", R.standard_normal((96, 128)).astype(np.float32))])
    assert f.attrs["schedule"] == "implicit gemm: 64x64 outputs a block, 4x4 a thread, 16 of 96 a stage"
    assert f.attrs["launch"] == ((2, 1, 1), (16, 16, 1))


def test_kernels_the_tiles_do_not_divide_or_too_small_stay_one_output_per_thread():
    f = _lowered(*_conv_nodes(3, 5, 7, 3, 1, 1))            # 5 channels x 7 positions: no lanes divide both
    assert "schedule" not in f.attrs or not f.attrs["schedule"].startswith("implicit gemm")
    assert [b.size for b in _shared(f) if b.scope == "local"] == [1]


def _qconv(pad, hw=16):
    X = helper.make_tensor_value_info("x", TensorProto.UINT8, [1, 16, hw, hw])
    Y = helper.make_tensor_value_info("y", TensorProto.UINT8, [1, 32, hw + 2 * pad - 2, hw + 2 * pad - 2])
    inits = [init("xs", np.array(0.1, np.float32)), init("xz", np.array(7, np.uint8)),
             init("w", R.integers(0, 255, (32, 16, 3, 3)).astype(np.uint8)), init("ws", np.array(0.05, np.float32)),
             init("wz", np.array(3, np.uint8)), init("ys", np.array(0.3, np.float32)), init("yz", np.array(5, np.uint8))]
    node = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"], pads=[pad] * 4)
    return [node], [X], [Y], inits


def test_a_zero_point_conv_with_padding_keeps_its_clipped_window():
    """(x - zx) * (w - zw): a staged zero is not padding once its zero point is subtracted, so the
    padded conv keeps its clipped window and is left to the one-output tiles; unpadded, it has
    no clip and takes register tiles."""
    assert not _lowered(*_qconv(1)).attrs.get("schedule", "").startswith("implicit gemm")
    assert _lowered(*_qconv(0)).attrs["schedule"].startswith("implicit gemm: 32x14 outputs a block, 4x2")


def test_a_padded_conv_with_runtime_weights_keeps_its_clipped_window():
    """0 * w is 0 only for a finite w: with weights given at run time, the padded float conv keeps
    its clipped window (and the one-output tiles); unpadded, it takes the register tiles."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4)]
    f = _lowered(nodes, [vi("x", [1, 32, 28, 28]), vi("w", [64, 32, 3, 3])], [vi("y", [1, 64, 28, 28])])
    assert not f.attrs.get("schedule", "").startswith("implicit gemm")
    g = _lowered([helper.make_node("Conv", ["x", "w"], ["y"])], [vi("x", [1, 32, 28, 28]), vi("w", [64, 32, 1, 1])],
                 [vi("y", [1, 64, 28, 28])])
    assert g.attrs["schedule"].startswith("implicit gemm")


@opencl
@pytest.mark.parametrize("pad", [0, 1])
def test_zero_point_convs_on_pocl_match_onnxruntime(pad):
    check_opencl(make_model(*_qconv(pad)), {"x": R.integers(0, 255, (1, 16, 16, 16)).astype(np.uint8)}, rtol=0, atol=0)


def test_a_window_clipped_where_the_input_is_in_range_is_not_run_whole():
    """The proof, not the pattern: the same clipped loops over an input with a border (its taps
    past the clip read real values) must keep their clip."""
    from aot.schedules.gpu_gemm import implicit_gemm
    from aot.target import Target
    from aot.tir.expr import Load, transform
    from aot.tir.stmt import Buffer, map_exprs
    from test_gpu import _plain
    func = _plain(*_conv_nodes(32, 64, 28, 3, 1, 1))
    x = func.params[0]
    big = Buffer(x.name, x.dtype, (1, 32, 30, 30), x.scope)

    def shift(e):
        if isinstance(e, Load) and e.buffer is x:
            n, c, h, w = e.indices
            return Load(big, (n, c, h + 1, w + 1))
        return None
    body = map_exprs(func.body, lambda e: transform(e, shift))
    g = func.with_body(body, params=[big] + list(func.params[1:]))
    assert implicit_gemm(g, Target("cuda")) is None
    assert implicit_gemm(func, Target("cuda")) is not None


@opencl
@pytest.mark.parametrize("name", sorted(CONVS))
def test_implicit_gemm_convs_on_pocl_match_onnxruntime(name):
    model, feeds = _conv(name)
    res = check_opencl(model, feeds)
    src = next(v for k, v in members(res.tar).items() if k.endswith(".cl")).decode()
    assert "_acc0[15]" in src or "_acc0[7]" in src or "_acc0[3]" in src      # register tiles rendered


@gpu
@pytest.mark.parametrize("name", sorted(CONVS))
def test_implicit_gemm_convs_run_on_the_gpu_and_match_onnxruntime(name):
    check_opencl(*_conv(name), target="cuda", device="cuda")


@opencl
@pytest.mark.parametrize("shape", [(64, 96, 128), (32, 50, 64)])
def test_implicit_gemm_matmuls_on_pocl_match_onnxruntime(shape):
    check_opencl(*_matmul(*shape))


@nvcc
def test_implicit_gemm_cuda_mlf_compiles_with_nvcc_and_links():
    import os
    import aot
    from aot.host import build_host
    model, _ = _conv("3x3_pad1")
    res = aot.compile(model.SerializeToString(), target="cuda")
    cu = members(res.tar)["codegen/host/src/default_lib1.cu"].decode()
    assert "__shared__" in cu and "_acc0[15]" in cu
    assert os.path.exists(build_host(res.tar))      # nvcc -Werror all-warnings


def test_a_weight_tile_whole_in_its_trailing_dimensions_fills_as_one_run():
    """The 3x3 conv's weight tile is 64 channels x (16 input channels x 3 x 3): the 144 elements
    of a channel are contiguous in the weights and in the cache, so an element's address costs
    one division and one remainder, not one of each per dimension; the input tile (30 of 28
    columns, padding zero-filled) keeps its per-dimension checks."""
    from aot.tir.expr import Bin, Load, walk
    from aot.tir.stmt import For, Store, walk_stmts
    f = _lowered(*_conv_nodes(32, 64, 28, 3, 1, 1))
    fills = {lp.var.name: lp for lp in walk_stmts(f.body) if isinstance(lp, For) and lp.var.name.endswith("_fill")}

    def divisions(fill):
        loads = [ld for st in walk_stmts(fill.body) if isinstance(st, Store) for ld in walk(st.value)
                 if isinstance(ld, Load) and ld.buffer.scope == "global"]
        assert len(loads) == 1
        return sum(isinstance(x, Bin) and x.op in ("floordiv", "floormod", "/", "%") for x in walk(loads[0].indices[0]))
    weights, inputs = fills["p1_fill"], fills["p0_fill"]
    assert divisions(weights) == 2
    assert divisions(inputs) > 2


@pytest.mark.parametrize("value, whole", [(0.02, True), (np.inf, False)])
def test_a_uniform_weight_literal_is_a_finite_factor_and_an_infinite_one_is_not(value, whole):
    """The light models' splat weights reach the kernel as one literal: 0.02 x a padded zero is
    zero, so the window runs whole; inf x 0 is NaN, so that conv keeps its clip."""
    nodes = [helper.make_node("Conv", ["x", "w"], ["y"], pads=[1] * 4)]
    f = _lowered(nodes, [vi("x", [1, 32, 28, 28])], [vi("y", [1, 64, 28, 28])],
                 [init("w", np.full((64, 32, 3, 3), value, np.float32))])
    assert f.attrs.get("schedule", "").startswith("implicit gemm") == whole
