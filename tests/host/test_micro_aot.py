"""tvm.micro's host-driven AOT flow, as micro_aot.py drives it: a TFLite model imported with
relay.frontend.from_tflite, built with the AOT executor and the crt runtime, made into the "crt"
project, built with make, run through a Session's AOT executor; the label must be TFLite
Micro's. And testing.aot's compile_and_run on relay modules, against numpy's outputs."""
import os
from collections import OrderedDict

import numpy as np
import pytest

import aot as tvm
import aot.micro
import aot.micro.testing
from aot import relay
from aot.contrib.download import download_testdata
from aot.relay.backend import Executor, Runtime

from conftest import SHARED

KWS = os.path.join(SHARED, "models", "mlperf_tiny", "keyword_spotting")


@pytest.fixture
def kws_testdata(tmp_path, monkeypatch):
    """The tutorial's two downloads, bound to the KWS model and input in ../shared."""
    if not os.path.isfile(os.path.join(KWS, "kws_ref_model.tflite")):
        pytest.skip("../shared has no MLPerf Tiny KWS model")
    (tmp_path / "model").mkdir()
    (tmp_path / "data").mkdir()
    os.symlink(os.path.join(KWS, "kws_ref_model.tflite"), tmp_path / "model" / "kws_ref_model.tflite")
    os.symlink(os.path.join(KWS, "inputs", "kws_input_int8_1x49x10x1.npy"), tmp_path / "data" / "sample.npy")
    monkeypatch.setenv("AOT_TESTDATA_DIR", str(tmp_path))


def _tflm_scores(model_path, sample):
    from tflm_oracle import run_tflm, tflm_available
    if not tflm_available():
        pytest.skip("the tflite-micro wheel is not installed")
    with open(model_path, "rb") as f:
        return run_tflm(f.read(), [sample])[0]


def test_micro_aot_flow_on_the_host_gives_tflite_micros_label(kws_testdata, tmp_path):
    import tflite
    model_path = download_testdata("https://example.org/kws_ref_model.tflite", "kws_ref_model.tflite",
                                   module="model")
    sample = np.load(download_testdata("https://example.org/sample.npy", "sample.npy", module="data"))
    with open(model_path, "rb") as f:
        tfl = tflite.Model.GetRootAsModel(f.read(), 0)
    mod, params = relay.frontend.from_tflite(tfl, shape_dict={"input_1": (1, 49, 10, 1)},
                                             dtype_dict={"input_1": "int8"})
    with tvm.transform.PassContext(opt_level=3, config={"tir.disable_vectorize": True}):
        module = tvm.relay.build(mod, target=tvm.micro.testing.get_target("crt"), params=params,
                                 runtime=Runtime("crt", {"system-lib": True}), executor=Executor("aot"))
    template = tvm.micro.get_microtvm_template_projects("crt")
    project = tvm.micro.generate_project(template, module, tmp_path / "project", {})
    project.build()
    project.flash()
    assert os.access(tmp_path / "project" / "build" / "model", os.X_OK)
    with tvm.micro.Session(project.transport()) as session:
        ex = tvm.runtime.executor.aot_executor.AotModule(session.create_aot_executor())
        assert ex.get_num_inputs() == 1 and ex.get_input_index("input_1") == 0
        ex.get_input("input_1").copyfrom(sample)
        ex.run()
        scores = ex.get_output(0).numpy()
    want = _tflm_scores(model_path, sample)
    np.testing.assert_array_equal(scores, want)           # TFLite Micro's int8 scores, bit for bit
    assert int(np.argmax(scores)) == int(np.argmax(want))
    # the MLF the tutorial can export is the one the project was made from
    path = tvm.micro.export_model_library_format(module, tmp_path / "model.tar")
    assert open(path, "rb").read() == open(tmp_path / "project" / "model.tar", "rb").read()


def test_session_runs_each_inference_on_the_current_inputs(tmp_path):
    x = relay.var("x", shape=(4,), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.nn.relu(x) * relay.const(np.float32(2.0)))
    with tvm.transform.PassContext(opt_level=3):
        module = relay.build(mod, target="c", executor=Executor("aot"), runtime=Runtime("crt"))
    project = tvm.micro.generate_project(tvm.micro.get_microtvm_template_projects("crt"), module,
                                         tmp_path / "p")
    project.build()
    with tvm.micro.Session(project.transport()) as session:
        ex = tvm.runtime.executor.aot_executor.AotModule(session.create_aot_executor())
        for v in ([1, -2, 3, -4], [-1, 5, 0, 2]):
            ex.set_input("x", np.array(v, "float32"))
            ex.run()
            np.testing.assert_array_equal(ex.get_output(0).numpy(), np.maximum(np.array(v, "float32"), 0) * 2)
    with pytest.raises(aot.errors.AotError, match="not open"):
        ex.run()


def _conv_model(groups=1, cin=8, cout=8, hw=7):
    from aot.testing.aot import AOTTestModel, generate_ref_data
    rng = np.random.default_rng(3)
    ishape, wshape = (1, cin, hw, hw), (cout, cin // groups, 3, 3)
    d = relay.var("data", shape=ishape, dtype="float32")
    w = relay.var("weight", shape=wshape, dtype="float32")
    y = relay.nn.conv2d(d, w, kernel_size=(3, 3), padding=(1, 1), groups=groups)
    mod = tvm.IRModule()
    mod["main"] = relay.Function([d, w], y)
    mod = relay.transform.InferType()(mod)
    inputs = OrderedDict([("data", rng.uniform(0, 1, ishape).astype("float32")),
                          ("weight", rng.uniform(0, 1, wshape).astype("float32"))])
    return mod, inputs, generate_ref_data(mod, inputs), AOTTestModel


def test_compile_and_run_checks_a_relay_module_on_the_host(tmp_path):
    from aot.micro.testing.aot_test_utils import AOT_DEFAULT_RUNNER
    from aot.testing.aot import AOTTestRunner, compile_and_run
    mod, inputs, outputs, Model = _conv_model(groups=2)
    runner = AOTTestRunner(makefile=AOT_DEFAULT_RUNNER.makefile, prologue='(void)puts("prologue ran");',
                           epilogue='(void)puts("epilogue ran");', includes=["stdio.h"],
                           pass_config={"tir.usmp.enable": True})
    assert compile_and_run(Model(module=mod, inputs=inputs, outputs=outputs), runner, interface_api="c",
                           use_unpacked_api=True, target="c", test_dir=str(tmp_path))
    log = (tmp_path / "build" / "test_run.log").read_text()
    assert log.splitlines() == ["prologue ran", "AOT_TEST_SUCCESS", "epilogue ran"]
    assert (tmp_path / "default" / "metadata.json").is_file()


def test_compile_and_run_fails_on_a_wrong_expected_output(tmp_path):
    from aot.micro.testing.aot_test_utils import AOT_DEFAULT_RUNNER
    from aot.testing.aot import compile_and_run
    mod, inputs, outputs, Model = _conv_model()
    wrong = {"output": outputs["output"].copy()}
    wrong["output"][0, 3, 2, 2] += 0.01
    with pytest.raises(AssertionError, match=r"(?s)output output\[\d+\] = .*1 mismatched element"):
        compile_and_run(Model(module=mod, inputs=inputs, outputs=wrong), AOT_DEFAULT_RUNNER, interface_api="c",
                        use_unpacked_api=True, test_dir=str(tmp_path))
    # within the tolerance given, the same output passes
    assert compile_and_run(Model(module=mod, inputs=inputs, outputs=wrong, output_tolerance=0.02),
                           AOT_DEFAULT_RUNNER, interface_api="c", use_unpacked_api=True,
                           test_dir=str(tmp_path / "again"))


def test_graph_executor_over_a_session_as_micro_tflite_drives_it(tmp_path):
    rng = np.random.default_rng(11)
    w = rng.standard_normal((16, 1)).astype("float32")
    x = relay.var("dense_input", shape=(1, 1), dtype="float32")
    wv = relay.var("w", shape=(16, 1), dtype="float32")
    mod = tvm.IRModule.from_expr(relay.Function([x, wv], relay.nn.relu(relay.nn.dense(x, wv))))
    with tvm.transform.PassContext(opt_level=3, config={"tir.disable_vectorize": True}):
        module = relay.build(mod, target=tvm.micro.testing.get_target("crt"),
                             runtime=Runtime("crt", {"system-lib": True}), params={"w": w})
    project = tvm.micro.generate_project(tvm.micro.get_microtvm_template_projects("crt"), module,
                                         tmp_path / "generated-project", {})
    project.build()
    project.flash()
    with tvm.micro.Session(transport_context_manager=project.transport()) as session:
        graph_mod = tvm.micro.create_local_graph_executor(module.get_graph_json(), session.get_system_lib(),
                                                          session.device)
        graph_mod.set_input(**module.get_params())
        graph_mod.set_input("dense_input", tvm.nd.array(np.array([[0.5]], dtype="float32")))
        graph_mod.run()
        out = graph_mod.get_output(0).numpy()
    np.testing.assert_allclose(out, np.maximum(np.array([[0.5]], "float32") @ w.T, 0), rtol=1e-6)
    with pytest.raises(aot.errors.AotError, match="get_system_lib"):
        tvm.micro.create_local_graph_executor(module.get_graph_json(), object(), None)


def test_create_aot_session_and_predict_labels(kws_testdata, tmp_path):
    from aot.micro.testing import create_aot_session, predict_labels_aot
    import tflite
    path = download_testdata("u", "kws_ref_model.tflite", module="model")
    with open(path, "rb") as f:
        mod, params = relay.frontend.from_tflite(tflite.Model.GetRootAsModel(f.read(), 0))
    sample = np.load(download_testdata("u", "sample.npy", module="data"))
    with create_aot_session("crt", None, tvm.micro.testing.get_target("crt"), mod, params,
                            build_dir=tmp_path) as session:
        ex = tvm.runtime.executor.aot_executor.AotModule(session.create_aot_executor())
        labels = list(predict_labels_aot(session, ex, [sample, sample], runs_per_sample=2))
    want = int(np.argmax(_tflm_scores(path, sample)))
    assert [lab for lab, _ in labels] == [want, want] and all(t > 0 for _, t in labels)
