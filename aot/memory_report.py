"""Human-readable memory plan: a table, and an SVG with time (kernel steps) across and
workspace offset down, one box per tensor."""
from __future__ import annotations

import re
from xml.sax.saxutils import escape


def strip_steps(rows):
    """[(strip, first step, last step)] of a patched stage (aot/passes/patch.py names each strip's
    tensors <value>@patch<k>, a strip's column tiles <value>@patch<k>_<tile>): the kernel steps
    that compute each strip."""
    spans = {}
    for r in rows:
        m = re.search(r"@patch(\d+)(?:_\d+)?$", r["name"])
        if m:
            k = int(m.group(1))
            lo, hi = spans.get(k, (r["first"], r["first"]))
            spans[k] = (min(lo, r["first"]), max(hi, r["first"]))
    return [(k, *spans[k]) for k in sorted(spans)]


def describe_execution(execution):
    """One line for metadata's aot.execution: layer by layer, or the patched stage."""
    p = (execution or {}).get("patch")
    if not p:
        return "execution: layer by layer"
    cols = p.get("columns", 1)
    tiles = f"{p['strips']} strips of rows" + (f", {cols} tiles of columns each" if cols > 1 else "")
    return f"execution: the first {p['layers']} layers in {tiles} (patch-based), +{p['extra_macs']:,} multiply-accumulates"


def table(rows, total, bound, kernels, execution=None):
    lines = [describe_execution(execution)] if execution is not None else []
    for k, lo, hi in strip_steps(rows):
        lines.append(f"  strip {k}: steps {lo}..{hi}")
    lines.append(f"{'tensor':40s} {'bytes':>10s} {'first':>6s} {'last':>6s} {'offset':>10s}  note")
    for r in sorted(rows, key=lambda r: (r["first"], r["offset"])):
        note = f"pool {r['pool']}; " if r.get("pool") else ""
        note += f"written in place of {r['in_place_of']}" if r.get("in_place_of") else ""
        note += ("; " if r.get("in_place_of") else "") + f"slice of {r['slice_of']}" if r.get("slice_of") else ""
        lines.append(f"{r['name'][:40]:40s} {r['bytes']:10d} {r['first']:6d} {r['last']:6d} {r['offset']:10d}  {note}")
    peak_step, peak = 0, 0
    for t in range(len(kernels)):
        # a tensor written in place shares its first step's bytes with the input it replaces
        live = sum(r["bytes"] for r in rows if r["first"] <= t <= r["last"]
                   and not (r.get("in_place_of") and r["first"] == t) and not r.get("slice_of"))
        if live > peak:
            peak_step, peak = t, live
    lines.append(f"workspace {total} bytes; lower bound {bound} bytes (peak of live tensors, at step {peak_step}"
                 f"{': ' + kernels[peak_step] if kernels else ''}); plan / bound = {total / bound if bound else 1:.3f}")
    return "\n".join(lines)


def _color(k):
    import colorsys
    hue = (k * 0.381966) % 1.0   # golden-angle hues: neighbours differ
    r, g, b = colorsys.hls_to_rgb(hue, 0.65, 0.55)
    return f"#{int(r * 255):02x}{int(g * 255):02x}{int(b * 255):02x}"


def svg(rows, total, bound, kernels, title="memory plan", width=900, height=520, execution=None):
    left, top, right, bottom = 90, 50, 20, 60
    steps = max(len(kernels), max((r["last"] for r in rows), default=0) + 1, 1)
    w, h = width - left - right, height - top - bottom
    sx, sy = w / steps, h / max(total, 1)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left}" y="20" font-size="14">{escape(title)}</text>',
           f'<text x="{left}" y="38" fill="#444">workspace {total:,} bytes, lower bound {bound:,} bytes '
           f'({(total / bound if bound else 1):.3f}x); {len(rows)} tensors over {len(kernels)} kernels</text>',
           f'<rect x="{left}" y="{top}" width="{w}" height="{h}" fill="#f4f4f4" stroke="#999"/>']
    if execution is not None:
        out.insert(3, f'<text x="{left + w:.0f}" y="38" fill="#444" text-anchor="end">'
                      f'{escape(describe_execution(execution))}</text>')
    for k, lo, hi in strip_steps(rows):      # a patched stage's strips: bands behind their tensors
        x0, x1 = left + lo * sx, left + (hi + 1) * sx
        out.append(f'<rect x="{x0:.1f}" y="{top}" width="{x1 - x0:.1f}" height="{h}" '
                   f'fill="{"#dde8f6" if k % 2 == 0 else "#eef3fa"}"><title>strip {k}: steps {lo}..{hi}</title></rect>')
        if x1 - x0 > 24:
            out.append(f'<text x="{(x0 + x1) / 2:.1f}" y="{top - 4}" text-anchor="middle" fill="#335">{k}</text>')
    # a tensor written in place takes over the second half of its input's last step
    handed = {(r["in_place_of"], r["offset"], r["first"]) for r in rows if r.get("in_place_of")}
    for k, r in enumerate(sorted(rows, key=lambda r: (r["first"], r["offset"]))):
        t0 = r["first"] + (0.5 if r.get("in_place_of") else 0)
        t1 = r["last"] + (0.5 if (r["name"], r["offset"], r["last"]) in handed else 1)
        x, y = left + t0 * sx, top + r["offset"] * sy
        bw, bh = max((t1 - t0) * sx, 1.0), max(r["bytes"] * sy, 0.5)
        tip = f'{r["name"]}: {r["bytes"]:,} B at offset {r["offset"]:,}, live in steps {r["first"]}..{r["last"]}'
        if r.get("in_place_of"):
            tip += f', written in place of {r["in_place_of"]}'
        if r.get("slice_of"):
            tip += f', placed in its slice of {r["slice_of"]}'
        out.append(f'<rect x="{x:.1f}" y="{y:.1f}" width="{bw:.1f}" height="{bh:.1f}" fill="{_color(k)}" '
                   f'stroke="#333" stroke-width="0.5"><title>{escape(tip)}</title></rect>')
        if bh > 13 and bw > 60:
            out.append(f'<text x="{x + 3:.1f}" y="{y + 12:.1f}" fill="#111">{escape(r["name"][: int(bw / 6)])}</text>')
    for frac in (0, 0.25, 0.5, 0.75, 1.0):
        y = top + frac * h
        out.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#333"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{int(frac * total):,}</text>')
    ticks = max(1, steps // 10)
    for t in range(0, steps + 1, ticks):
        x = left + t * sx
        out.append(f'<line x1="{x:.1f}" y1="{top + h}" x2="{x:.1f}" y2="{top + h + 4}" stroke="#333"/>')
        out.append(f'<text x="{x:.1f}" y="{top + h + 16}" text-anchor="middle">{t}</text>')
    out.append(f'<text x="{left + w / 2:.0f}" y="{height - 18}" text-anchor="middle">kernel step (time)</text>')
    out.append(f'<text x="18" y="{top + h / 2:.0f}" transform="rotate(-90 18 {top + h / 2:.0f})" '
               f'text-anchor="middle">workspace offset (bytes)</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
