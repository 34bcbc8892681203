"""micro.testing.utils with TVM's names: targets for aot's templates ("crt" and the emulated
boards), the boards each offers, and small helpers over an MLF."""
from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import numpy as np

from ...errors import AotError


def get_supported_platforms():
    """The platforms get_microtvm_template_projects takes."""
    from ..project import template_names
    return template_names()


def get_supported_boards(platform):
    """{board: {"model": its core, "description": ...}} of a template: "crt" has the host, an
    emulated board's template has that board."""
    from ..project import HOST_BOARD, load_template, get_microtvm_template_projects
    b = load_template(get_microtvm_template_projects(platform))
    if b["name"] == HOST_BOARD:
        return {"host": {"model": "host", "description": b.get("description", "")}}
    return {b["name"]: {"model": b["core"], "description": b.get("description", "")}}


def get_target(platform, board=None):
    """The target a template's board compiles for: "crt" the host ('c'), an emulated board its
    core ('c -mcpu=cortex-m4'). board, when given, must be one of the platform's boards."""
    from ...compiler import board_target
    from ...target import Target
    boards = get_supported_boards(platform)
    if board is not None and board not in boards:
        raise AotError(f"get_target: board '{board}' is not a board of platform '{platform}' "
                       f"(its boards: {', '.join(boards)})")
    name = board or next(iter(boards))
    return Target("c") if name == "host" else board_target(name)


def mlf_extract_workspace_size_bytes(mlf_tar_path):
    """The workspace bytes an MLF's main function needs (metadata.json)."""
    with tarfile.open(str(mlf_tar_path), "r:*") as t:
        meta = json.load(t.extractfile("./metadata.json"))
    return sum(m["memory"]["functions"]["main"][0]["workspace_size_bytes"] for m in meta["modules"].values())


_CTYPES = {"int8": "int8_t", "uint8": "uint8_t", "int16": "int16_t", "int32": "int32_t", "float32": "float"}


def create_header_file(tensor_name, npy_data, output_path, tar_file):
    """A C header holding the array as `<tensor_name>[]` and its length, added to tar_file under
    output_path (as TVM's helper)."""
    a = np.asarray(npy_data)
    if str(a.dtype) not in _CTYPES:
        raise AotError(f"create_header_file: dtype {a.dtype} is not one of {', '.join(_CTYPES)}")
    values = ", ".join(repr(float(x)) + "f" if a.dtype.kind == "f" else str(int(x)) for x in a.reshape(-1))
    text = ("#include <stddef.h>\n#include <stdint.h>\n"
            f"const size_t {tensor_name}_len = {a.size};\n"
            f"{_CTYPES[str(a.dtype)]} {tensor_name}[] = {{{values}}};\n").encode()
    info = tarfile.TarInfo(name=str(Path(output_path) / f"{tensor_name}.h"))
    info.size, info.mode = len(text), 0o644
    tar_file.addfile(info, io.BytesIO(text))


def get_conv2d_relay_module():
    """The relay module TVM's MLF and AOT tests build on: main(data int8 [1, 3, 64, 64], weight int8
    [8, 3, 5, 5]) = conv2d NCHW/OIHW, 5x5, padding 2, 8 channels, int32 out."""
    from ... import relay
    data = relay.var("data", relay.TensorType((1, 3, 64, 64), "int8"))
    weight = relay.var("weight", relay.TensorType((8, 3, 5, 5), "int8"))
    out = relay.nn.conv2d(data, weight, padding=(2, 2), channels=8, kernel_size=(5, 5), data_layout="NCHW",
                          kernel_layout="OIHW", out_dtype="int32")
    return relay.transform.InferType()(relay.IRModule.from_expr(relay.Function([data, weight], out)))
