"""What a kernel's PTX says about its memory traffic: global loads and stores (and their widths),
64-bit integer division left in a loop, local-memory traffic.

``memory_stats(ptx)`` reads the PTX that benchmarks/kernels_static.py compiles with NVVM:
  ld, st, atom          global loads (``ld.global``, ``.nc`` included), stores, atomics/reductions
  ld_loop, st_loop      how many of them sit inside a loop
  ld_bits               the widths of the loads, in bits (a ``.v4.f32`` load is 128)
  ld_bits_loop          the widths of the loads inside loops (where a kernel spends its time)
  vector                whether any load or store is a vector one (``.v2`` / ``.v4``)
  div64, div64_loop     ``div``/``rem`` on 64-bit integers (``.s64``/``.u64``), all and in loops:
                        dozens of instructions each (the hardware divides no integers). NVVM
                        often guards one with a 32-bit path when both operands fit; it is
                        still counted, since the check runs anyway
  local                 ``ld.local``/``st.local`` instructions (a local array; ptxas's spills
                        are reported apart)
A loop is the span between a label and a later branch back to it: static counts, not how
often each runs (benchmarks/simulated_facts.py measures that, per element, in the simulator).
"""
from __future__ import annotations

import re

_LINE = re.compile(r"^\s*(?:@!?%p\d+\s+)?(?P<op>[a-z]+(?:\.[a-z0-9]+)*)\s*(?P<args>[^;]*);", re.M)
_LABEL = re.compile(r"^(\$[\w]+):", re.M)
_BITS = {"b8": 8, "u8": 8, "s8": 8, "b16": 16, "u16": 16, "s16": 16, "f16": 16, "b32": 32, "u32": 32,
         "s32": 32, "f32": 32, "b64": 64, "u64": 64, "s64": 64, "f64": 64}


def _loops(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of every loop: a label and a branch back to it from below."""
    where = {}
    spans = []
    for number, line in enumerate(lines):
        label = _LABEL.match(line)
        if label:
            where[label.group(1)] = number
        branch = re.search(r"\bbra(?:\.uni)?\s+(\$[\w]+)", line)
        if branch and where.get(branch.group(1), number + 1) <= number:
            spans.append((where[branch.group(1)], number))
    return spans


def _width(op: str) -> int:
    parts = op.split(".")
    vector = next((int(p[1:]) for p in parts if p in ("v2", "v4", "v8")), 1)
    return vector * next((_BITS[p] for p in reversed(parts) if p in _BITS), 0)


def memory_stats(ptx: str) -> dict:
    lines = ptx.splitlines()
    loops = _loops(lines)
    in_loop = lambda n: any(a <= n <= b for a, b in loops)
    stats = {"ld": 0, "ld_loop": 0, "st": 0, "st_loop": 0, "atom": 0, "ld_bits": set(), "ld_bits_loop": set(),
             "vector": False, "div64": 0, "div64_loop": 0, "local": 0}
    for number, line in enumerate(lines):
        match = _LINE.match(line)
        if not match:
            continue
        op = match.group("op")
        parts = op.split(".")
        if parts[0] in ("ld", "st") and "global" in parts:
            kind = parts[0]
            stats[kind] += 1
            stats[f"{kind}_loop"] += in_loop(number)
            stats["vector"] |= any(p in ("v2", "v4", "v8") for p in parts)
            if kind == "ld":
                stats["ld_bits"].add(_width(op))
                if in_loop(number):
                    stats["ld_bits_loop"].add(_width(op))
        elif parts[0] in ("atom", "red") and "global" in parts:
            stats["atom"] += 1
        elif parts[0] in ("div", "rem") and parts[-1] in ("s64", "u64"):
            stats["div64"] += 1
            stats["div64_loop"] += in_loop(number)
        elif parts[0] in ("ld", "st") and "local" in parts:
            stats["local"] += 1
    stats["ld_bits"], stats["ld_bits_loop"] = sorted(stats["ld_bits"]), sorted(stats["ld_bits_loop"])
    return stats


def describe(stats: dict) -> dict:
    """The table's cells for one compiled kernel (benchmarks/results/kernels_static.md)."""
    widths = stats["ld_bits"]
    return {
        "ld/st": f"{stats['ld']}/{stats['st']}" + (f" +{stats['atom']} atomic" if stats["atom"] else ""),
        "in loops": f"{stats['ld_loop']}/{stats['st_loop']}",
        "load bits": ("/".join(map(str, widths)) or "-") + (" vector" if stats["vector"] else ""),
        "div64 (loop)": f"{stats['div64']} ({stats['div64_loop']})" if stats["div64"] else "0",
        "local": str(stats["local"]) if stats["local"] else "0",
    }
