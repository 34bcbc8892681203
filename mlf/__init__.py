"""Model Library Format: the tarball layout of TVM's microTVM AOT output (metadata version 7)."""
from .reader import MLF, read_mlf, validate  # noqa: F401
from .writer import empty_param_dict, make_metadata, select_module, write_tar  # noqa: F401
