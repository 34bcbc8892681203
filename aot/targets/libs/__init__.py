"""The external libraries a target's -libs= names (TVM's cuda -libs=cudnn,cublas): built-in
plug-in backends (aot.uma), so they partition, plan and call exactly as a user's accelerator does.
Each is one module here, <name>.py with its UMABackend class as BACKEND, found by name
(aot.target.resolve), with the C wrapper it ships in the MLF as package data beside it."""


def tf32(backend):
    """1 where the backend's target lets float32 use TF32 tensor cores (cuda ... -tf32), else 0:
    the literal each library's init and run calls take."""
    return 1 if backend.target is not None and backend.target.get("tf32") else 0
