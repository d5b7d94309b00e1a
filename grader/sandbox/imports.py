"""The import statements of a submission: run alone in a fresh sandbox before the learner's
code, they set the memory baseline that measured calls count from
(``Sandbox._meter_baseline``). Found by the worker, inside the sandbox (it imports this file
by path; standard library only): parsing learner text costs the sandbox's memory and time,
never the grader's."""
from __future__ import annotations

import ast

CELL_MARK = "# --- cell "


def _chunks(source: str) -> list[str]:
    """The whole source if it parses, else its notebook cells one by one."""
    try:
        ast.parse(source)
        return [source]
    except (SyntaxError, ValueError):
        pass
    chunks, current = [], []
    for line in source.splitlines():
        if line.startswith(CELL_MARK) and current:
            chunks.append("\n".join(current))
            current = []
        current.append(line)
    chunks.append("\n".join(current))
    return chunks


WARM_UP = """
import sys as _sys
import numpy as _np
_a = _np.ones((64, 64))
_a @ _a  # BLAS sets up its buffers once, on first use
if "torch" in _sys.modules:  # so does torch: kernels, thread pools, autograd's engine
    try:
        import torch as _torch
        if "torch.utils.checkpoint" in _sys.modules:
            import torch._dynamo  # which checkpoint() imports on its first call
        _t = _torch.ones((64, 64), dtype=_torch.float64, requires_grad=True)
        _torch.relu(_torch.addmm(_t[0], _t, _t)).sum().backward()
        del _t
    except BaseException:
        pass
del _a
"""
"""Run after the imports, before the baseline: libraries' one-time set-up on first use is
not the learner's memory either."""


def import_lines(sources: list[str]) -> str:
    """Code that runs each top-level ``import``/``from ... import`` of ``sources`` (a file,
    or a notebook's cells) once, each guarded so a missing module is not an error here
    (loading the code reports it), then warms the libraries up."""
    out = []
    for chunk in (c for source in sources for c in _chunks(source)):
        try:
            tree = ast.parse(chunk)
        except (SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not (
                    isinstance(node, ast.ImportFrom) and (node.level or node.module == "__future__")):
                out.append("try:\n    " + ast.unparse(node) + "\nexcept BaseException:\n    pass")
    return "\n".join(out + [WARM_UP])
