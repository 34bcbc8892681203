"""The graph-level Python layer, with TVM's relay names: dataflow patterns today (used by
partitioning and plug-in backends); the graph builder builds on the same graph IR."""
