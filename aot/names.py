"""Model names -> C identifiers. Nothing from a model reaches C without passing here."""
from __future__ import annotations

import re

from codegen_c.c_renderer import C_KEYWORDS


def sanitize(name: str) -> str:
    """Non-alphanumerics become '_' (case kept, as TVM does); never empty, a keyword or digit-led."""
    s = re.sub(r"[^0-9A-Za-z_]", "_", str(name))
    if not s:
        s = "_"
    if s[0].isdigit():
        s = "_" + s
    if s in C_KEYWORDS:
        s += "_"
    return s


def unique_c_names(names, reserved=()):
    """Sanitised, pairwise-distinct names, also distinct when upper-cased (they form macros).

    Returns (c_names, notes) where notes describe every rename a collision caused."""
    taken = {r.upper() for r in reserved}
    out, notes = [], []
    for n in names:
        base = sanitize(n)
        cand, k = base, 1
        while cand.upper() in taken:
            cand, k = f"{base}_{k}", k + 1
        if cand != base:
            notes.append(f"tensor name '{n}' sanitises to '{base}', which is taken; it is '{cand}' in C")
        taken.add(cand.upper())
        out.append(cand)
    return out, notes


def model_c_name(name: str) -> str:
    """--model-name as used inside identifiers (tvmgen_<mod>_run): lowercased, [a-z0-9_] only.

    It is always a part of a longer identifier, so keywords need no escaping."""
    return re.sub(r"[^a-z0-9_]", "_", str(name).lower())


def comment_safe(text: str) -> str:
    """Text that cannot end a C comment or start a preprocessor line."""
    return re.sub(r"[^0-9A-Za-z_.:,+\-\[\] ]", "_", str(text))[:120]
