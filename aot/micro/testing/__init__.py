"""micro.testing with TVM's names: the targets and boards of aot's templates, and the AOT test
runners (aot_test_utils)."""
from .evaluation import create_aot_session, predict_labels_aot, tune_model  # noqa: F401
from .utils import get_supported_boards, get_supported_platforms, get_target  # noqa: F401
