"""TVM's contrib packages this compiler refuses (CUTLASS offload, the pipeline executor): a
ported program gets past its imports, and each use is refused by name with the reason."""
import pytest

import aot
from aot.errors import AotError


def test_cutlass_and_pipeline_names_import_and_refuse_when_used():
    from aot.contrib.cutlass import finalize_modules
    from aot.contrib import pipeline_executor, pipeline_executor_build
    from aot.relay.op.contrib.cutlass import partition_for_cutlass
    with pytest.raises(AotError, match=r"tvm\.relay\.op\.contrib\.cutlass\.partition_for_cutlass: CUTLASS"):
        partition_for_cutlass(None)
    with pytest.raises(AotError, match=r"tvm\.contrib\.cutlass\.finalize_modules: CUTLASS"):
        finalize_modules(None, "compile.so", "./tmp")
    with pytest.raises(AotError, match=r"PipelineConfig: the pipeline executor"):
        pipeline_executor_build.PipelineConfig()
    with pytest.raises(AotError, match=r"PipelineModule\.load_library: the pipeline executor"):
        pipeline_executor.PipelineModule.load_library("x")
    with pytest.raises(AotError, match=r"tvm\.contrib\.pipeline_executor\.anything_else"):
        pipeline_executor.anything_else
    assert pipeline_executor.pipeline_executor_enabled() is False
    assert not hasattr(pipeline_executor, "anything_else")


def test_relay_op_stays_a_module_with_its_ops():
    import aot.relay.op.contrib.cutlass as cutlass
    from aot.relay.op import add, layout_transform  # noqa: F401
    assert aot.relay.op.contrib.cutlass is cutlass
    assert aot.contrib.cutlass is __import__("sys").modules["aot.contrib.cutlass"]
