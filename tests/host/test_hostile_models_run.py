"""Hostile input that must compile, build and run correctly (the refusals: tests/unit/test_hostile_input.py):
C-hostile model, tensor and node names, external data, NaN/inf inputs, zero-size dimensions, long chains,
and a bad optimisation flag or an unwritable project directory refused at build time; bad npz inputs to a
built model."""
import numpy as np
import pytest
from onnx import TensorProto, helper

from conftest import check_model, init, make_model, ort_run, vi

from test_hostile_input import HOSTILE, add_model, chain_model, cli, compile_refused, external_model, mlf_bytes, refused, save  # noqa: F401


def test_zero_size_dims_compile_and_run(tmp_path, capsys):
    """A zero-size dimension is a valid (empty) tensor: given in the model or with --input-shape."""
    import aot
    def summed(dims):
        return make_model([helper.make_node("ReduceSum", ["x", "axes"], ["y"], keepdims=0)],
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, dims)], [vi("y", None)],
                          [init("axes", np.array([1], np.int64))])
    x = np.zeros((3, 0), np.float32)
    m = summed([3, 0])
    out = aot.run(aot.compile(m.SerializeToString()), {"x": x})["y"]
    np.testing.assert_array_equal(out, ort_run(m, {"x": x})["y"])
    p = save(tmp_path, summed([3, "N"]))
    rc, _, err = cli(capsys, "compile", p, "-o", tmp_path / "z.tar", "--input-shape", "x=3,0")
    assert rc == 0, err
    np.savez(tmp_path / "z.npz", x=x)
    rc, out, err = cli(capsys, "run", tmp_path / "z.tar", "--inputs", tmp_path / "z.npz", "--outputs", tmp_path / "o.npz")
    assert rc == 0, err
    with np.load(tmp_path / "o.npz") as z:
        np.testing.assert_array_equal(z["y"], ort_run(m, {"x": x})["y"])


def test_external_data(tmp_path, capsys):
    d = tmp_path / "model"
    d.mkdir()
    compile_refused(tmp_path, capsys, save(d, external_model("weights.bin")), "initializer 'w'", "weights.bin")
    (tmp_path / "secret.bin").write_bytes(np.ones(6, np.float32).tobytes())
    compile_refused(tmp_path, capsys, save(d, external_model("../secret.bin")), "initializer 'w'", "outside")
    compile_refused(tmp_path, capsys, save(d, external_model(str(tmp_path / "secret.bin"))), "initializer 'w'", "outside")
    # inside the folder it is read and used
    (d / "weights.bin").write_bytes(np.arange(6, dtype=np.float32).tobytes())
    import aot
    x = np.ones((2, 3), np.float32)
    res = aot.compile(str(save(d, external_model("weights.bin"))))
    np.testing.assert_array_equal(aot.run(res, {"x": x}, sanitize=False)["y"], x + np.arange(6).reshape(2, 3))


def test_bogus_opt_and_unwritable_project(tmp_path, capsys, mlf_bytes):
    tar = tmp_path / "m.tar"
    tar.write_bytes(mlf_bytes)
    np.savez(tmp_path / "in.npz", x=np.zeros((2, 3), np.float32))
    refused(capsys, ["run", tar, "--inputs", tmp_path / "in.npz", "--opt=-fbogus-flag"], "--opt", "-fbogus-flag")
    refused(capsys, ["size", tar, "--board", "qemu-cortex-m4", "--allow-target-mismatch", "--opt", "Ofast-please"], "--opt")
    refused(capsys, ["project", tar, "--board", "qemu-cortex-m4", "--allow-target-mismatch", "-o", "/proc/aot-project"], "/proc/aot-project")


def test_nan_and_inf_inputs_run(tmp_path, capsys):
    import aot
    nodes = [helper.make_node("Add", ["x", "b"], ["t"]), helper.make_node("Mul", ["t", "x"], ["u"]),
             helper.make_node("Exp", ["u"], ["y"])]
    m = make_model(nodes, [vi("x", [2, 3])], [vi("y", [2, 3])], [init("b", np.arange(3, dtype=np.float32))])
    tar = tmp_path / "m.tar"
    aot.compile(m.SerializeToString(), output=str(tar))
    x = np.array([[np.nan, np.inf, -np.inf], [1.5, -2.0, np.nan]], np.float32)
    np.savez(tmp_path / "in.npz", x=x)
    rc, out, err = cli(capsys, "run", tar, "--inputs", tmp_path / "in.npz", "--outputs", tmp_path / "out.npz")
    assert rc == 0, err
    with np.load(tmp_path / "out.npz") as z:
        np.testing.assert_array_equal(z["y"], ort_run(m, {"x": x})["y"])


def test_hostile_tensor_and_node_names():
    names = [n for n in HOSTILE if n]
    inputs, nodes, feeds = names[:6], [], {}
    r = np.random.default_rng(0)
    prev = None
    for k, n in enumerate(inputs):
        feeds[n] = r.standard_normal((2, 3)).astype(np.float32)
    for k, n in enumerate(names[6:]):
        a = inputs[k % len(inputs)] if prev is None else prev
        nodes.append(helper.make_node("Add", [a, inputs[(k + 1) % len(inputs)]], [n], name=names[(k + 3) % len(names)]))
        prev = n
    nodes.append(helper.make_node("Mul", [prev, "*/ #include <x> \n"], ["scaled */"], name="%n"))
    outs = names[6:] + ["scaled */"]
    m = make_model(nodes, [vi(n, [2, 3]) for n in inputs], [vi(n, [2, 3]) for n in outs],
                   [init("*/ #include <x> \n", np.arange(3, dtype=np.float32))])
    res, _ = check_model(m, feeds)
    c_names = [c for c, _, _ in res.plan.inputs] + [c for c, _, _ in res.plan.outputs]
    assert len({c.upper() for c in c_names}) == len(c_names)
    assert all(len(c) <= 63 for c in c_names)


@pytest.mark.parametrize("name", ["*/x", 'q"uote', "a\nb", "#define", "%s", "int", "MiXeD-Case.v2", "9lives",
                                  "__LINE__", "m" * 100])
def test_hostile_model_names_compile_and_run(name):
    import aot
    m = add_model()
    x = np.random.default_rng(2).standard_normal((2, 3)).astype(np.float32)
    res = aot.compile(m.SerializeToString(), model_name=name)
    from mlf import read_mlf, validate
    assert validate(read_mlf(res.tar)) == []
    np.testing.assert_allclose(aot.run(res, {"x": x}, sanitize=False)["y"], ort_run(m, {"x": x})["y"], rtol=1e-6)


def test_long_elementwise_chain():
    """Hundreds of fused elementwise nodes: no RecursionError, bounded kernels, correct."""
    x = np.random.default_rng(3).standard_normal((4, 8)).astype(np.float32)
    res, _ = check_model(chain_model(400), {"x": x}, sanitize=False)
    from aot.passes.fuse import MAX_FUSE_DEPTH
    assert len(res.plan.calls) >= 400 // MAX_FUSE_DEPTH


def test_chain_of_double_readers_stays_small():
    """Softsign reads its input twice: inlining a chain of them doubles the expression each step."""
    import time
    x = np.random.default_rng(4).standard_normal((4, 8)).astype(np.float32)
    t = time.time()
    check_model(chain_model(40, ("Softsign",)), {"x": x}, sanitize=False)
    assert time.time() - t < 60


@pytest.mark.slow
def test_3000_node_chain_matches_onnxruntime():
    import time
    x = np.random.default_rng(5).standard_normal((4, 8)).astype(np.float32)
    t = time.time()
    check_model(chain_model(3000), {"x": x}, sanitize=False)
    assert time.time() - t < 120


# -- npz inputs -----------------------------------------------------------------------------------------
def test_npz_inputs(tmp_path, capsys, mlf_bytes):
    tar = tmp_path / "m.tar"
    tar.write_bytes(mlf_bytes)
    x = np.zeros((2, 3), np.float32)
    cases = {"missing": ({"z": x}, "'x'"), "extra": ({"x": x, "bonus": x}, "'bonus'"),
             "dtype": ({"x": x.astype(np.float64)}, "float64"), "shape": ({"x": x[:1]}, "[1, 3]")}
    for name, (arrays, needle) in cases.items():
        np.savez(tmp_path / f"{name}.npz", **arrays)
        out = tmp_path / f"{name}_out.npz"
        refused(capsys, ["run", tar, "--inputs", tmp_path / f"{name}.npz", "--outputs", out], needle, out_path=out)
    np.save(tmp_path / "single.npy", x)
    refused(capsys, ["run", tar, "--inputs", tmp_path / "single.npy"], "single.npy")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 not really a zip")
    refused(capsys, ["run", tar, "--inputs", tmp_path / "junk.npz"], "junk.npz")
