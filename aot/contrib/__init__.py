"""Runtime helpers with TVM's names (tvm.contrib.graph_executor)."""
