"""micro.testing with TVM's names: the targets and boards of aot's templates, and the AOT test
runners (aot_test_utils)."""
from .utils import get_supported_boards, get_supported_platforms, get_target  # noqa: F401
