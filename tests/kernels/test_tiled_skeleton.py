"""Every kernel built on the tiled product is kernels/common/tiled_matmul.py's SKELETON, written
out, identical but for its epilogue, its own setup and its own work after the epilogue (issue 48
item 4: numba-cuda cannot take an epilogue as an argument, so the copies are held to one text).

Read from the source (no kernel runs, no simulator): a kernel that calls ``product_tile`` must
match the skeleton, statement for statement after ``ast.unparse`` (comments and layout left
out); a kernel that walks the shared axis itself (``multiply_tiles`` outside ``product_tile``)
must be one of the few named below, each a different walk.
"""
import ast
import re
from pathlib import Path

import pytest

from backprop_traps.kernels.common import tiled_matmul

KERNELS = Path(tiled_matmul.__file__).resolve().parents[1]
FILES = sorted(KERNELS.glob("*.py")) + sorted((KERNELS / "common").glob("*.py"))
# Walks of their own, not the skeleton's: why each is not ``product_tile``.
OWN_WALKS = {
    "tiled_matmul.product_tile": "the walk itself",
    "vram_trap_v2.linear_backward_input_kernel": "dz gated by the packed ReLU mask as its tiles are copied",
    "vram_trap_v2.linear_params_partials_kernel": "h^T with a row of ones (the bias), the rows split over grid z",
}
PLACEHOLDERS = {"DTYPE": r"\w+", "ROWS": r"\w+", "COLS": r"\w+"}


def _functions():
    for path in FILES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                yield f"{path.stem}.{node.name}", node


def _calls(node, name):
    return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Name) and c.func.id == name
               for c in ast.walk(node))


def _body(node) -> str:
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    return "\n".join(ast.unparse(statement) for statement in body)


def skeleton_pattern() -> re.Pattern:
    """SKELETON as a regular expression: a placeholder's first use captures a name, later uses
    must repeat it; SETUP and AFTER match whole statements or nothing, EPILOGUE one or more."""
    lines = ast.unparse(ast.parse(tiled_matmul.SKELETON)).split("\n")
    text = "\n".join(re.escape(line) for line in lines)  # newlines stay newlines
    for name, capture in PLACEHOLDERS.items():
        text = text.replace(name, f"(?P<{name.lower()}>{capture})", 1).replace(name, f"(?P={name.lower()})")
    text = text.replace(r"\*OPERANDS", r"(?P<operands>[^\n]+)")
    # SETUP, AFTER (any number) and EPILOGUE (one or more): whole statements at the placeholder's
    # own indentation (a first line with no more), each with its deeper lines
    statement = r"\n{0}\S[^\n]*(?:\n{0}\s[^\n]*)*"
    for name, repeat in (("SETUP", "*?"), ("AFTER", "*?"), ("EPILOGUE", "+?")):
        text = re.sub(rf"\n((?:\\ )*){name}",
                      lambda m: rf"(?P<{name.lower()}>(?:{statement.format(m.group(1))}){repeat})", text)
    return re.compile(text + r"\Z")


def skeleton_kernels():
    return sorted((name, node) for name, node in _functions()
                  if _calls(node, "product_tile") and name != "tiled_matmul.product_tile")


def test_the_skeleton_parses_and_its_pattern_matches_itself_with_empty_parts():
    plain = ast.unparse(ast.parse(tiled_matmul.SKELETON.replace("SETUP\n", "").replace("    AFTER\n", "")))
    found = skeleton_pattern().match(plain.replace("EPILOGUE", "out[m] = acc[i, j]"))
    assert found and found["epilogue"].strip() == "out[m] = acc[i, j]" and found["setup"] == found["after"] == ""


def test_the_kernels_that_build_on_the_tile_are_all_found():
    names = [name for name, _ in skeleton_kernels()]
    assert "tiled_matmul.matmul_kernel" in names and len(names) >= 8, names


@pytest.mark.parametrize("name, node", skeleton_kernels(), ids=lambda v: v if isinstance(v, str) else "")
def test_every_tiled_kernel_is_the_skeleton_but_for_its_epilogue(name, node):
    body = _body(node)
    assert skeleton_pattern().match(body), (
        f"{name} departs from tiled_matmul.SKELETON outside its epilogue, setup and after-work: "
        f"keep the copies identical (kernels/common/tiled_matmul.py says why).\n{body}")


def test_kernels_that_walk_the_shared_axis_themselves_are_the_named_few():
    own = {name for name, node in _functions() if _calls(node, "multiply_tiles")}
    assert own == set(OWN_WALKS), f"a new walk of the shared axis: use product_tile, or name it here: {own}"


def test_a_departure_outside_the_epilogue_is_caught():
    name, node = skeleton_kernels()[0]
    body = _body(node).replace("m0 += u64(cuda.gridDim.y * BM)", "m0 += u64(cuda.gridDim.y * BM * 2)")
    assert not skeleton_pattern().match(body)
    body = _body(node).replace("n = n0 + tx + u64(16 * j)", "n = n0 + tx + u64(8 * j)")
    assert not skeleton_pattern().match(body)
    lines = _body(node).split("\n")  # a statement of its own in the loop over i, after the one over j
    at = lines.index("    m0 += u64(cuda.gridDim.y * BM)")
    assert skeleton_pattern().match("\n".join(lines[:at] + ["    cuda.syncthreads()"] + lines[at:]))  # AFTER
    assert not skeleton_pattern().match("\n".join(lines[:at] + ["        cuda.syncthreads()"] + lines[at:]))
