"""input.txt (whitespace-separated floats) -> inputs.c (input_storage) and outputs.c (output_storage)."""
import os
import sys


def main(src, out_dir):
    with open(src) as f:
        vals = [float(v) for v in f.read().split()]
    with open(os.path.join(out_dir, "inputs.c"), "w") as f:
        f.write(f"float input_storage[{len(vals)}] = {{\n")
        f.write(",\n".join(f"  {v!r}f" if "e" in repr(v) or "." in repr(v) else f"  {v!r}.0f" for v in vals))
        f.write("\n};\n")
    with open(os.path.join(out_dir, "outputs.c"), "w") as f:
        f.write("#include <stddef.h>\n#include \"tvmgen_default.h\"\n")
        f.write("float output_storage[TVMGEN_DEFAULT_OUTPUT_SIZE / sizeof(float)];\n")
        f.write("extern const size_t output_len;\n")
        f.write("const size_t output_len = sizeof(output_storage) / sizeof(output_storage[0]);\n")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
