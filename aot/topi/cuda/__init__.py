"""topi.cuda: GPU schedules (blocks and threads bound with te's bind) for the topi computes; they
read the current target (`with aot.target.Target("cuda"):`) as TVM's do."""
from .conv2d import conv2d_nchw, schedule_conv2d_nchw  # noqa: F401
from .injective import schedule_broadcast, schedule_elemwise, schedule_injective  # noqa: F401
from .injective import schedule_injective_from_existing  # noqa: F401
from .reduction import schedule_reduce  # noqa: F401
from .softmax import schedule_log_softmax, schedule_softmax  # noqa: F401
from .dense import dense, schedule_dense  # noqa: F401
from .pooling import schedule_pool  # noqa: F401
