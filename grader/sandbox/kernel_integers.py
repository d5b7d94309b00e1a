"""A learner's kernel computes with a GPU's integer widths under the simulator (issue 43, class 4).

Numba's CUDA simulator runs a kernel as Python, on Python's unbounded integers, but the compiled
kernel computes on fixed widths: numba-cuda's typing (``numba/cuda/typing/builtins.py``,
``choose_result_int``, the integer typing NBEP) gives every integer ``+ - * // % ** << >> & | ^``
a result of ``max(64, widths of its operands)`` bits, signed when either operand is signed: an
int64 for everything a kernel's index arithmetic touches (literals, ``cuda.grid``, the int32
``threadIdx.x``/``blockIdx.x``/``blockDim.x``, loop variables, array shapes and int64 elements),
a uint64 only when both operands are unsigned. So ``(cuda.grid(1) << 62) >> 62`` is the thread
index under the simulator, and a wrapped, wrong one on a GPU.

``widen(module)`` rewrites the grader's own copy of the kernel's syntax tree (after
``kernel_rules`` accepted it, before it is compiled) so that every such operation, unary ``-``
and ``~``, and ``name op= value`` go through ``int_op``, which computes the exact result and
wraps it to int64 (a numpy uint64 when both operands are unsigned numpy integers, so that it
stays unsigned), as the GPU would; compiled numba is the tests' oracle for the results.
Operands that are not both integers (floats, arrays) take Python's own operator unchanged.
An element update ``a[i] op= v`` is left to numpy, which stores at the array's dtype and wraps
as the GPU's store does. Runs in the harness child as text (standard library only).
"""
import ast
import operator

HELPER = "_grader_int_op"
"""The name the rewritten kernels call; a submission that binds it is refused (kernel_source)."""
_OPS = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.FloorDiv: "floordiv", ast.Mod: "mod",
        ast.Pow: "pow", ast.LShift: "lshift", ast.RShift: "rshift", ast.BitAnd: "and_",
        ast.BitOr: "or_", ast.BitXor: "xor"}
_UNARY = {ast.USub: "neg", ast.Invert: "invert"}
_FUNCTIONS = {name: getattr(operator, name) for name in list(_OPS.values()) + list(_UNARY.values())}


def _integer(value):
    """(is an integer, is unsigned) for a Python or numpy integer; bools count as signed ints
    only beside an integer (``True & False`` stays a bool, as numba's boolean ops do)."""
    kind = getattr(getattr(value, "dtype", None), "kind", None)
    if kind in ("i", "u") and getattr(value, "ndim", 0) == 0:
        return True, kind == "u"
    return isinstance(value, int), False


def wrap(value: int, unsigned: bool = False) -> int:
    """``value`` in two's complement at 64 bits: int64, or uint64 when ``unsigned``."""
    value &= (1 << 64) - 1
    return value if unsigned or value < (1 << 63) else value - (1 << 64)


def int_op(name: str, a, b=None, unary: bool = False):
    """``a <name> b`` (or ``<name> a`` when ``unary``) as the compiled kernel computes it."""
    fn = _FUNCTIONS[name]
    if unary:
        is_int, unsigned = _integer(a)
        if not is_int or isinstance(a, bool) or unsigned:  # numpy wraps an unsigned -a or ~a itself
            return fn(a)
        return wrap(fn(int(a)))
    (a_int, a_unsigned), (b_int, b_unsigned) = _integer(a), _integer(b)
    both_bool = isinstance(a, bool) and isinstance(b, bool)
    if not (a_int and b_int) or both_bool:
        return fn(a, b)
    result = fn(int(a), int(b))
    if not isinstance(result, int):  # ``2 ** -1``: a float, as numba's int ** negative int
        return result
    if a_unsigned and b_unsigned:  # stays unsigned for the next operation, as a uint64 does
        import numpy
        return numpy.uint64(wrap(result, True))
    return wrap(result)


def _call(name: str, *args, unary: bool = False):
    keywords = [ast.keyword("unary", ast.Constant(True))] if unary else []
    return ast.Call(ast.Name(HELPER, ast.Load()), [ast.Constant(name), *args], keywords)


class _Widths(ast.NodeTransformer):
    def visit_BinOp(self, node):
        self.generic_visit(node)
        name = _OPS.get(type(node.op))
        return _call(name, node.left, node.right) if name else node

    def visit_UnaryOp(self, node):
        self.generic_visit(node)
        name = _UNARY.get(type(node.op))
        return _call(name, node.operand, unary=True) if name else node

    def visit_AugAssign(self, node):
        self.generic_visit(node)
        name = _OPS.get(type(node.op))
        if not name or not isinstance(node.target, ast.Name):
            return node  # an element update: numpy stores at the array's dtype
        load = ast.Name(node.target.id, ast.Load())
        return ast.copy_location(ast.Assign([node.target], _call(name, load, node.value)), node)


def widen(module: ast.Module) -> ast.Module:
    """``module`` with its integer arithmetic at the GPU's widths (see the module docstring)."""
    return ast.fix_missing_locations(_Widths().visit(module))
