"""tvm.micro's names over aot (no C compiler here): offline test data, template projects, the
project a template makes, the targets of micro.testing, Model Library Format export, and
testing.aot's numpy reference checked against onnxruntime."""
import json
import os
import socket
import tarfile

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import aot as tvm
import aot.micro
import aot.micro.testing
from aot import relay
from aot.contrib.download import TestDataMissing, download_testdata
from aot.errors import AotError


@pytest.fixture
def no_network(monkeypatch):
    def refuse(*a, **k):
        raise AssertionError("download_testdata opened a socket")
    monkeypatch.setattr(socket, "socket", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def test_download_testdata_finds_the_file_in_the_testdata_dir(tmp_path, monkeypatch, no_network):
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "m.tflite").write_bytes(b"abc")
    monkeypatch.setenv("AOT_TESTDATA_DIR", str(tmp_path))
    path = download_testdata("https://example.org/m.tflite", "m.tflite", module="model")
    assert open(path, "rb").read() == b"abc"
    # TVM's module may be a list of directories
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "b" / "x.npy").write_bytes(b"1")
    assert download_testdata("u", "x.npy", module=["a", "b"]).endswith(os.path.join("a", "b", "x.npy"))


def test_download_testdata_looks_in_the_cache_dir(tmp_path, monkeypatch, no_network):
    monkeypatch.delenv("AOT_TESTDATA_DIR", raising=False)
    monkeypatch.setenv("AOT_CACHE_DIR", str(tmp_path))
    (tmp_path / "testdata" / "data").mkdir(parents=True)
    (tmp_path / "testdata" / "data" / "s.npy").write_bytes(b"z")
    assert download_testdata("u", "s.npy", module="data") == str(tmp_path / "testdata" / "data" / "s.npy")


def test_download_testdata_refuses_a_missing_file_by_name(tmp_path, monkeypatch, no_network):
    monkeypatch.setenv("AOT_TESTDATA_DIR", str(tmp_path))
    with pytest.raises(TestDataMissing) as e:
        download_testdata("https://example.org/kws.tflite", "kws.tflite", module="model")
    msg = str(e.value)
    assert "model/kws.tflite" in msg and "https://example.org/kws.tflite" in msg
    assert str(tmp_path / "model" / "kws.tflite") in msg
    with pytest.raises(AotError, match="relative path"):
        download_testdata("u", "../etc/passwd", module="model")
    with pytest.raises(AotError, match="does not fetch"):
        tvm.contrib.download.download("https://example.org/x", str(tmp_path / "x"))


def test_template_projects_are_the_host_and_the_emulated_boards():
    crt = aot.micro.get_microtvm_template_projects("crt")
    assert os.path.isfile(os.path.join(crt, "board.json"))
    assert json.load(open(os.path.join(crt, "board.json")))["name"] == "host"
    m4 = aot.micro.get_microtvm_template_projects("qemu-cortex-m4")
    assert os.path.basename(m4) == "qemu-cortex-m4"
    with pytest.raises(AotError, match="zephyr.*vendor SDK.*crt, .*qemu-cortex-m4"):
        aot.micro.get_microtvm_template_projects("zephyr")
    with pytest.raises(AotError, match="no template project 'nope'"):
        aot.micro.get_microtvm_template_projects("nope")


def test_micro_testing_targets():
    assert tvm.micro.testing.get_target("crt").kind.name == "c"
    t = tvm.micro.testing.get_target("qemu-cortex-m4")
    assert t.mcpu == "cortex-m4"
    assert tvm.micro.testing.get_target("qemu-cortex-m55", "qemu-cortex-m55").mcpu == "cortex-m55"
    with pytest.raises(AotError, match="board 'nucleo_l4r5zi' is not a board of platform 'crt'"):
        tvm.micro.testing.get_target("crt", "nucleo_l4r5zi")
    assert tvm.micro.testing.get_supported_boards("qemu-cortex-m7")["qemu-cortex-m7"]["model"] == "cortex-m7"


def _conv_module():
    rng = np.random.default_rng(1)
    x = relay.var("x", shape=(1, 2, 5, 5), dtype="float32")
    w = relay.const(rng.standard_normal((3, 2, 3, 3)).astype("float32"))
    mod = tvm.IRModule.from_expr(relay.nn.relu(relay.nn.conv2d(x, w, padding=(1, 1))))
    return mod


def _built(mod):
    from aot.relay.backend import Executor, Runtime
    with tvm.transform.PassContext(opt_level=3):
        return relay.build(mod, target=tvm.micro.testing.get_target("crt"), executor=Executor("aot"),
                           runtime=Runtime("crt", {"system-lib": True}))


def test_generate_project_writes_a_host_project(tmp_path):
    module = _built(_conv_module())
    project = tvm.micro.generate_project(tvm.micro.get_microtvm_template_projects("crt"), module,
                                         tmp_path / "project", {})
    root = tmp_path / "project"
    rec = json.load(open(root / "microtvm_project.json"))
    assert rec["template"] == "crt" and rec["board"] == "host" and rec["module"] == "default"
    assert (root / "model.tar").read_bytes() == module.tar
    assert (root / "model" / "codegen" / "host" / "include" / "tvmgen_default.h").is_file()
    main_c = (root / "src" / "main.c").read_text()
    assert "tvmgen_default_run" in main_c
    mk = (root / "Makefile").read_text()
    assert "-Werror" in mk and "model/codegen/host/src/default_lib1.c" in mk and "src/main.c" in mk
    assert project.info()["is_template"] is False
    # not built: the transport will not open, flash refuses
    with pytest.raises(AotError, match="not built"):
        project.flash()
    with pytest.raises(AotError, match="not built"):
        with tvm.micro.Session(project.transport()):
            pass


def test_generate_project_writes_a_board_project(tmp_path):
    module = _built(_conv_module())
    tvm.micro.generate_project(tvm.micro.get_microtvm_template_projects("qemu-cortex-m4"), module,
                               tmp_path / "p", {"opt": "-Os"})
    mk = (tmp_path / "p" / "Makefile").read_text()
    assert "arm-none-eabi-gcc" in mk and "-mcpu=cortex-m4" in mk and "-Os" in mk and "-Tlink.ld" in mk
    assert (tmp_path / "p" / "board" / "link.ld").is_file() and (tmp_path / "p" / "board" / "startup.c").is_file()
    assert "in0.bin" in (tmp_path / "p" / "src" / "main.c").read_text()


def test_generate_project_refuses_unknown_options_and_a_used_directory(tmp_path):
    module = _built(_conv_module())
    crt = tvm.micro.get_microtvm_template_projects("crt")
    with pytest.raises(ValueError, match="zephyr_base.*options: verbose, project_type, opt"):
        tvm.micro.generate_project(crt, module, tmp_path / "a", {"zephyr_base": "/x"})
    with pytest.raises(AotError, match="only 'host_driven'"):
        tvm.micro.generate_project(crt, module, tmp_path / "b", {"project_type": "aot_standalone_demo"})
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "f").write_text("x")
    with pytest.raises(AotError, match="not an empty directory"):
        tvm.micro.generate_project(crt, module, tmp_path / "c", {})
    with pytest.raises(AotError, match="not a template project"):
        tvm.micro.generate_project(str(tmp_path), module, tmp_path / "d", {})
    with pytest.raises(AotError, match="has no Model Library Format"):
        tvm.micro.generate_project(crt, object(), tmp_path / "e", {})


def test_export_model_library_format_writes_the_mlf(tmp_path):
    module = _built(_conv_module())
    path = tmp_path / "model.tar"
    assert tvm.micro.export_model_library_format(module, path) == path
    with tarfile.open(path) as t:
        names = t.getnames()
    assert "./metadata.json" in names and "./codegen/host/src/default_lib1.c" in names
    assert path.read_bytes() == module.tar
    with pytest.raises(tvm.micro.UnsupportedInModelLibraryFormatError):
        tvm.micro.export_model_library_format(object(), tmp_path / "x.tar")


def _ort_conv(x, w, b=None, **attrs):
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)]
    inits = [numpy_helper.from_array(w, "w")] + ([numpy_helper.from_array(b, "b")] if b is not None else [])
    node = helper.make_node("Conv", ["x", "w"] + (["b"] if b is not None else []), ["y"], **attrs)
    g = helper.make_graph([node], "g", ins, [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    return ort.InferenceSession(m.SerializeToString()).run(None, {"x": x})[0]


@pytest.mark.parametrize("strides,padding,dilation,groups", [
    ((1, 1), (1, 1), (1, 1), 1), ((2, 2), (0, 1, 2, 1), (1, 1), 1), ((1, 2), (2, 2), (2, 1), 2)])
def test_generate_ref_data_matches_onnxruntime(strides, padding, dilation, groups):
    from aot.testing.aot import generate_ref_data
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 4, 9, 8)).astype("float32")
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype("float32")
    b = rng.standard_normal(6).astype("float32")
    d = relay.var("data", shape=x.shape, dtype="float32")
    wv = relay.var("weight", shape=w.shape, dtype="float32")
    y = relay.nn.bias_add(relay.nn.conv2d(d, wv, strides=strides, padding=padding, dilation=dilation, groups=groups),
                          relay.const(b))
    mod = tvm.IRModule.from_expr(relay.Function([d, wv], relay.nn.relu(y)))
    got = generate_ref_data(mod, {"data": x, "weight": w})
    pads = list(padding) if len(padding) == 4 else [padding[0], padding[1]] * 2
    want = np.maximum(_ort_conv(x, w, b, strides=list(strides), pads=pads, dilations=list(dilation),
                                group=groups), 0)
    assert list(got) == ["output"]
    np.testing.assert_allclose(got["output"], want, rtol=1e-5, atol=1e-5)


def test_generate_ref_data_refuses_an_op_without_reference():
    from aot.testing.aot import generate_ref_data
    x = relay.var("x", shape=(2, 3), dtype="float32")
    f = relay.Function([x], relay.Call("nn.made_up", [x]))
    with pytest.raises(AotError, match="nn.made_up has no numpy reference"):
        generate_ref_data(tvm.IRModule.from_expr(f), {"x": np.ones((2, 3), "float32")})


def test_aot_test_runner_defaults_and_refusals(tmp_path):
    from aot.micro.testing.aot_test_utils import AOT_CORSTONE300_RUNNER, AOT_DEFAULT_RUNNER
    from aot.testing.aot import AOTTestModel, compile_and_run
    assert AOT_DEFAULT_RUNNER.makefile == "default" and AOT_DEFAULT_RUNNER.includes == []
    mod = _conv_module()
    model = AOTTestModel(module=mod, inputs={"x": np.zeros((1, 2, 5, 5), "float32")},
                         outputs={"output": np.zeros((1, 3, 5, 5), "float32")})
    with pytest.raises(AotError, match="corstone300.*not here"):
        compile_and_run(model, AOT_CORSTONE300_RUNNER, interface_api="c", use_unpacked_api=True,
                        test_dir=str(tmp_path))
    with pytest.raises(AotError, match="use_unpacked_api=True"):
        compile_and_run(model, AOT_DEFAULT_RUNNER, interface_api="c", use_unpacked_api=False)


KWS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "..", "shared",
                   "models", "mlperf_tiny", "keyword_spotting")


@pytest.mark.skipif(not os.path.isdir(KWS), reason="../shared has no MLPerf Tiny KWS model")
def test_generate_ref_data_runs_imported_models_in_their_frameworks_runtime():
    import onnx
    import tflite
    from aot.testing.aot import generate_ref_data
    from tflm_oracle import run_tflm, tflm_available
    sample = np.load(os.path.join(KWS, "inputs", "kws_input_int8_1x49x10x1.npy"))
    if tflm_available():
        buf = open(os.path.join(KWS, "kws_ref_model.tflite"), "rb").read()
        mod, _ = relay.frontend.from_tflite(tflite.Model.GetRootAsModel(buf, 0))
        got = generate_ref_data(mod, {"input_1": sample})
        # keyed as TVM's: by main's output_tensor_names, the TFLite model's output tensors
        (out,) = mod["main"].attrs["output_tensor_names"]
        np.testing.assert_array_equal(got[out], run_tflm(buf, [sample])[0])
    model = onnx.load(os.path.join(KWS, "kws_ref_model_float32.onnx"))
    mod, _ = relay.frontend.from_onnx(model)
    x = np.random.default_rng(2).standard_normal((1, 49, 10, 1)).astype("float32")
    name = mod["main"].params[0].name_hint
    want = ort.InferenceSession(model.SerializeToString()).run(None, {name: x})[0]
    np.testing.assert_array_equal(generate_ref_data(mod, {name: x})["output"], want)
