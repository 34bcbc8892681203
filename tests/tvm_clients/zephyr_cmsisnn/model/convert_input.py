"""input.txt (whitespace-separated int8 values) -> inputs.c (input_storage) and outputs.c (output_storage)."""
import os
import sys


def main(src, out_dir):
    with open(src) as f:
        vals = [int(v) for v in f.read().split()]
    if any(not -128 <= v <= 127 for v in vals):
        raise SystemExit(f"{src}: values must be int8")
    with open(os.path.join(out_dir, "inputs.c"), "w") as f:
        f.write("#include <stdint.h>\n#include \"tvmgen_default.h\"\n")
        f.write(f"int8_t input_storage[{len(vals)}] = {{\n")
        f.write(",\n".join(f"  {v}" for v in vals))
        f.write("\n};\n")
    with open(os.path.join(out_dir, "outputs.c"), "w") as f:
        f.write("#include <stddef.h>\n#include <stdint.h>\n#include \"tvmgen_default.h\"\n")
        f.write("int8_t output_storage[TVMGEN_DEFAULT_IDENTITY_SIZE];\n")
        f.write("extern const size_t output_len;\n")
        f.write("const size_t output_len = sizeof(output_storage) / sizeof(output_storage[0]);\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
