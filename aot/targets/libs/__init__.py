"""The external libraries a target's -libs= names (TVM's cuda -libs=cudnn,cublas): built-in
plug-in backends (aot.uma), so they partition, plan and call exactly as a user's accelerator does.
Each is one module here, <name>.py with its UMABackend class as BACKEND, found by name
(aot.target.resolve), with the C wrapper it ships in the MLF as package data beside it."""
