"""The in-place strategies, one module each: a kernel's output takes the storage of an input that
dies there (write_over), a kernel staged to do so through a small scratch (staged), a smaller
output written over the start of its input (shrunk), and a concatenation's inputs produced
straight into their slices of its output (concat). dying.py: the kernels that qualify. Each
strategy asks the memory plan (aot/executor/memory.py) to record the Alias it proved safe."""
