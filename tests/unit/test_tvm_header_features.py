"""What TVM's header tests (tests/python/relay/aot at 513c2be) read from a build, each checked
against numpy or TVM's documented behaviour: relay.testing's MobileNet and synthetic workloads,
the C target's constants- / workspace-byte-alignment options, the factory's imported_modules and
lowered_ir_mods (the executor main as TIR), and InferType's function type."""
import re

import numpy as np
import pytest

import aot as tvm
from aot import relay
from aot.errors import AotError
from aot.relay.backend import Executor, Runtime
from aot.target import Target


def _build(mod, target="c", params=None, executor=None):
    return relay.build(mod, target, params=params, executor=executor or Executor("aot"), runtime=Runtime("crt"))


def _add_module():
    x, y = relay.var("x", shape=(1, 10)), relay.var("y", shape=(1, 10))
    return tvm.IRModule.from_expr(relay.Function([x, y], relay.add(x, y)))


def test_mobilenet_workload_has_mobilenet_v1_layers():
    mod, params = relay.testing.mobilenet.get_workload(batch_size=1)
    ftype = mod["main"].checked_type
    assert [int(d) for d in ftype.arg_types[0].shape] == [1, 3, 224, 224]
    assert [int(d) for d in ftype.ret_type.shape] == [1, 1000]
    # Howard et al. 2017, table 1: a 3x3/2 conv to 32, then (depthwise, pointwise) blocks
    blocks = [(32, 64), (64, 128), (128, 128), (128, 256), (256, 256), (256, 512)] + [(512, 512)] * 5 + \
        [(512, 1024), (1024, 1024)]
    want = {"conv_block_1_conv_weight": (32, 3, 3, 3), "fc_weight": (1000, 1024), "fc_bias": (1000,)}
    want.update({f"conv_block_1_bn_{p}": (32,) for p in ("gamma", "beta", "moving_mean", "moving_var")})
    for k, (dw, pw) in enumerate(blocks, start=1):
        b = f"separable_conv_block_{k}"
        want[f"{b}_weight"] = (dw, 1, 3, 3)
        want[f"{b}_conv2_weight"] = (pw, dw, 1, 1)
        for bn, c in (("bn1", dw), ("bn2", pw)):
            want.update({f"{b}_{bn}_{p}": (c,) for p in ("gamma", "beta", "moving_mean", "moving_var")})
    assert {k: tuple(v.shape) for k, v in params.items()} == want
    assert sum(int(np.prod(s)) for s in want.values()) == 4253864
    # Xavier over (fan_in + fan_out) / 2 of the receptive field: |w| <= sqrt(3 / 459) for the first conv
    w = params["conv_block_1_conv_weight"].numpy()
    assert 0 < np.abs(w).max() <= np.sqrt(3 / ((3 * 9 + 32 * 9) / 2))
    again = relay.testing.mobilenet.get_workload(batch_size=1)[1]["conv_block_1_conv_weight"].numpy()
    assert np.array_equal(w, again)        # seeded: the same every time


def _synthetic_numpy(x, p):
    """TVM's synthetic network written out in numpy."""
    def conv3x3(a, w):
        n, c, h, wd = a.shape
        pad = np.pad(a, ((0, 0), (0, 0), (1, 1), (1, 1)))
        out = np.zeros((n, w.shape[0], h, wd), np.float64)
        for i in range(3):
            for j in range(3):
                out += np.einsum("nchw,oc->nohw", pad[:, :, i:i + h, j:j + wd], w[:, :, i, j])
        return out

    def softmax(a):
        e = np.exp(a - a.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    def dense_relu(a, w):
        return np.maximum(a.reshape(-1, a.shape[-1]) @ w.T, 0).reshape(a.shape)

    s = dense_relu(x, p["dense_weight"]) + softmax(conv3x3(x, p["conv_weight"]))
    s = s + p["bias"].reshape(1, -1, 1, 1)
    s = (s - p["batch_norm_moving_mean"].reshape(1, -1, 1, 1)) / np.sqrt(
        p["batch_norm_moving_var"].reshape(1, -1, 1, 1) + 1e-5) * p["batch_norm_gamma"].reshape(1, -1, 1, 1) + \
        p["batch_norm_beta"].reshape(1, -1, 1, 1)
    return dense_relu(s, p["dense2_weight"]) + softmax(conv3x3(s, p["conv2_weight"]))


def test_synthetic_workload_matches_numpy():
    from aot.testing.aot import generate_ref_data
    mod, params = relay.testing.synthetic.get_workload()
    p = {k: v.numpy() for k, v in params.items()}
    assert {k: v.shape for k, v in p.items()} == {
        "dense_weight": (12, 12), "conv_weight": (3, 3, 3, 3), "bias": (3,), "batch_norm_gamma": (3,),
        "batch_norm_beta": (3,), "batch_norm_moving_mean": (3,), "batch_norm_moving_var": (3,),
        "dense2_weight": (12, 12), "conv2_weight": (3, 3, 3, 3)}
    assert np.all(p["dense_weight"] == np.float32(1 / 144)) and np.all(p["conv_weight"] == np.float32(1 / 81))
    x = np.random.default_rng(0).uniform(-1, 1, (1, 3, 24, 12)).astype("float32")
    got = generate_ref_data(mod, {"data": x}, params)["output"]
    np.testing.assert_allclose(got, _synthetic_numpy(x.astype(np.float64), p), rtol=1e-5, atol=1e-5)


def test_reshape_like_takes_the_other_shape():
    from aot.testing.aot import generate_ref_data
    a, b = relay.var("a", shape=(2, 6)), relay.var("b", shape=(3, 2, 2))
    mod = tvm.IRModule.from_expr(relay.Function([a, b], relay.add(relay.reshape_like(a, b), b)))
    x, y = np.arange(12, dtype="float32").reshape(2, 6), np.ones((3, 2, 2), "float32")
    np.testing.assert_array_equal(generate_ref_data(mod, {"a": x, "b": y})["output"], x.reshape(3, 2, 2) + 1)
    c = relay.var("c", shape=(5,))
    with pytest.raises(AotError, match="reshape_like"):
        _build(tvm.IRModule.from_expr(relay.Function([a, c], relay.reshape_like(a, c))))


@pytest.mark.parametrize("align", [8, 16, 32])
def test_constants_byte_alignment_sets_the_constants_attribute(align):
    w = relay.const(np.arange(10, dtype="float32").reshape(1, 10))
    x = relay.var("x", shape=(1, 10))
    mod = tvm.IRModule.from_expr(relay.Function([x], relay.add(x, w)))
    target = f"c -constants-byte-alignment={align}"
    lib = _build(mod, Target(target, host=target))
    src = lib.imported_modules[0].get_source()
    assert f'__attribute__((section(".rodata.tvm"), aligned({align})))' in src
    assert len(re.findall(r"aligned\(\d+\)", src)) == 2          # the constants', the workspace's (16)


def test_workspace_byte_alignment_from_target_and_executor():
    mod, params = relay.testing.synthetic.get_workload()

    def offsets(lib):
        main = lib.lowered_ir_mods.items()[0][1]["__tvm_main__"]
        return {int(m) for m in re.findall(r"workspace\.data, (\d+),", main.script())}

    # every intermediate of the synthetic net is 3 * 24 * 12 floats = 3456 bytes, not a multiple of 256
    assert any(o % 256 for o in offsets(_build(mod, params=params)))
    assert all(o % 256 == 0 for o in offsets(_build(mod, "c -workspace-byte-alignment=256", params=params)))
    by_exec = _build(mod, params=params, executor=Executor("aot", {"workspace-byte-alignment": 256}))
    assert all(o % 256 == 0 for o in offsets(by_exec))


@pytest.mark.parametrize("bad", ["12", "0", "x", "536870912"])
def test_byte_alignment_options_are_powers_of_two(bad):
    for name in ("constants-byte-alignment", "workspace-byte-alignment"):
        with pytest.raises(AotError, match=f"-{name}={bad}' must be a power of two"):
            Target(f"c -{name}={bad}")
    assert Target("c -constants-byte-alignment=64").attrs["constants-byte-alignment"] == 64


def test_imported_module_is_the_host_c_without_the_header():
    lib = _build(_add_module())
    mods = lib.imported_modules
    assert len(mods) == 1 and mods[0].type_key == "c"
    src = mods[0].get_source()
    assert "int32_t tvmgen_default_fused_add(" in src and "int32_t tvmgen_default_run(" in src
    assert "#ifndef TVMGEN_DEFAULT_H_" not in src


def test_lowered_main_checks_each_call_return():
    lib = _build(_add_module())
    lowered = lib.lowered_ir_mods.items()
    assert len(lowered) == 1 and lowered[0][0].kind == "c"
    main = lowered[0][1]["__tvm_main__"]
    assert repr(main.body.value) == ('T.tvm_check_return(0, -1, T.call_extern("int32", "tvmgen_default_fused_add",'
                                     ' x_buffer_var, y_buffer_var, output_buffer_var))')
    # the C main does what the TIR says: a call that does not return 0 makes main return -1
    c = lib.imported_modules[0].get_source()
    assert re.search(r"if \(tvmgen_default_fused_add\(x_buffer_var, y_buffer_var, output_buffer_var\) != 0\s*\)"
                     r"\s*\{?\s*return -1;", c)


def test_infer_type_gives_the_function_type():
    mod = relay.transform.InferType()(_add_module())
    t = mod["main"].checked_type
    assert [[int(d) for d in a.shape] for a in t.arg_types] == [[1, 10], [1, 10]]
    assert [int(d) for d in t.ret_type.shape] == [1, 10] and t.ret_type.dtype == "float32"


def test_tflite_main_names_its_outputs_as_tvm_and_ref_data_follows():
    from tflite_build import ModelBuilder

    from aot.testing.aot import generate_ref_data
    mb = ModelBuilder()
    x = mb.tensor("input", [1, 4], "float32")
    a = mb.tensor("StatefulPartitionedCall:0", [1, 4], "float32")
    b = mb.tensor("out/tanh", [1, 4], "float32")
    mb.op("RELU", [x], [a])
    mb.op("TANH", [x], [b])
    mod, _ = relay.frontend.from_tflite(mb.finish(inputs=[x], outputs=[a, b]))
    # TVM's frontend: each byte that is not an ASCII letter or digit becomes '_'
    assert list(mod["main"].attrs["output_tensor_names"]) == ["StatefulPartitionedCall_0", "out_tanh"]
    v = np.array([[-1.0, 0.5, 2.0, -3.0]], "float32")
    ref = generate_ref_data(mod, {"input": v})
    assert list(ref) == ["StatefulPartitionedCall_0", "out_tanh"]
    np.testing.assert_allclose(ref["StatefulPartitionedCall_0"], np.maximum(v, 0))
    np.testing.assert_allclose(ref["out_tanh"], np.tanh(v), rtol=1e-6)
    # and the generated C names the outputs so (TVM's test_output_tensor_names greps for them)
    src = _build(mod, executor=Executor("aot", {"interface-api": "c", "unpacked-api": True}),
                 ).imported_modules[0].get_source()
    assert "StatefulPartitionedCall_0" in src and "out_tanh" in src


def test_function_memory_map_is_the_mlf_memory_table():
    import io
    import json
    import tarfile

    from aot.micro import model_library_format as mlf
    mod, params = relay.testing.synthetic.get_workload()
    lib = _build(mod, params=params, executor=Executor("aot", {"workspace-byte-alignment": 256}))
    with tarfile.open(fileobj=io.BytesIO(lib.tar)) as t:
        table = json.load(t.extractfile("./metadata.json"))["modules"]["default"]["memory"]["functions"]
    got = mlf._build_function_memory_map(lib.function_metadata)
    assert got == table
    # every intermediate is 3456 bytes; three live at once at most, each start 256-aligned
    assert got["main"][0]["workspace_size_bytes"] == 2 * (-(-3456 // 256) * 256) + 3456
    assert got["main"][0]["io_size_bytes"] == 2 * 3456


def test_function_memory_map_adds_the_largest_operator_workspace_to_main():
    from aot.micro.function_memory import FunctionInfo, build_function_memory_map
    c = Target("c")
    meta = {"__tvm_main__": FunctionInfo({c: 100}, {c: 8}, {c: 4}),
            "f": FunctionInfo({c: 30}, tir_primfuncs={c: "f"}), "g": FunctionInfo({c: 70}, tir_primfuncs={c: "g"}),
            "byoc": FunctionInfo({c: 999})}          # no TIR: TVM leaves it out
    got = build_function_memory_map(meta)
    assert got["main"] == [{"device": 1, "workspace_size_bytes": 170, "constants_size_bytes": 4, "io_size_bytes": 8}]
    assert [f["function_name"] for f in got["operator_functions"]] == ["f", "g"]


def _int8_softmax_after_tanh():
    from tflite_build import ModelBuilder
    mb = ModelBuilder()
    x = mb.tensor("x", [1, 10], "int8", scale=0.05, zero_point=-3)
    t = mb.tensor("t", [1, 10], "int8", scale=1 / 128, zero_point=0)
    mb.op("TANH", [x], [t])
    y = mb.tensor("y", [1, 10], "int8", scale=1 / 256, zero_point=-128)
    mb.op("SOFTMAX", [t], [y], beta=1.0)
    return mb.finish(inputs=[x], outputs=[y])


def test_partition_for_cmsisnn_hands_what_cmsis_nn_covers_to_it():
    import io
    import tarfile

    import aot
    from aot.relay.op.contrib import cmsisnn
    data = _int8_softmax_after_tanh()
    mod, params = relay.frontend.from_tflite(data)
    part = cmsisnn.partition_for_cmsisnn(mod, params)
    assert not getattr(mod, "partitioned_for", ())            # its argument is left as it was
    # TVM builds a partitioned module for plain "c": the partitioned functions go to CMSIS-NN
    for target, tvmc in (("c", "cmsis-nn, c"), ("c -mcpu=cortex-m55", "cmsis-nn -mcpu=cortex-m55, c -mcpu=cortex-m55")):
        lib = _build(part, target)
        assert lib.tar == aot.compile(data, target=tvmc).tar
    with tarfile.open(fileobj=io.BytesIO(_build(part).tar)) as t:
        lib2 = t.extractfile("./codegen/host/src/default_lib2.c").read().decode()
        lib1 = t.extractfile("./codegen/host/src/default_lib1.c").read().decode()
    assert "int32_t tvmgen_default_cmsis_nn_main_0(" in lib2 and "tvmgen_default_cmsis_nn_main_0(" in lib1
    assert "cmsis_nn" not in _build(mod).get_source()          # unpartitioned: all on the host
    with pytest.raises(AotError, match="partition_for_cmsisnn takes an IRModule"):
        cmsisnn.partition_for_cmsisnn(data)
    assert aot.testing.requires_cmsisnn(len) is len
