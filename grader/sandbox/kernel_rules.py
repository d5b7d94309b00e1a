"""What a graded CUDA kernel may say: the subset of Python a kernel's source is checked against
before the grader compiles it (``kernel_source``), and the constants it may read.

Under Numba's CUDA simulator a kernel body is plain Python run in the grader's child, next to
the race checker that logs its accesses. So the body may name nothing but what a kernel needs:
its parameters and locals, module-level constants and device functions of the same source,
numba's ``cuda`` (the members below), ``math``, numpy's and numba's scalar types, and a few
builtins. No attribute whose name starts with ``_``, no attribute stores, no imports, nested
functions, comprehensions, ``try``/``with``/``global``/``del``: nothing that could reach the
checker, a frame or a module. docs/questions/maxpool_kernel.md says the same to learners.

Runs in the child as text (standard library only), and in the kit's tests by import.
"""
import ast
import math

XYZ = {"x", "y", "z"}
ATOMIC_OPS = {"add", "sub", "and_", "or_", "xor", "inc", "dec", "exch", "max", "min", "nanmax",
              "nanmin", "cas", "compare_and_swap"}
CUDA_MEMBERS = {"threadIdx": XYZ, "blockIdx": XYZ, "blockDim": XYZ, "gridDim": XYZ, "atomic": ATOMIC_OPS,
                "shared": {"array"}, "local": {"array"}, "const": {"array_like"}}
CUDA_API = set(CUDA_MEMBERS) | {
    "grid", "gridsize", "laneid", "warpsize", "syncthreads", "syncthreads_count", "syncthreads_and",
    "syncthreads_or", "threadfence", "threadfence_block", "threadfence_system", "fma", "cbrt", "popc",
    "brev", "clz", "ffs", "selp"}
SCALAR_TYPES = {"float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint64", "uint32",
                "uint16", "uint8", "intp", "uintp"}
MODULE_NAMES = {
    "numba.cuda": CUDA_API,
    "math": {n for n in dir(math) if not n.startswith("_")},
    "numpy": SCALAR_TYPES - {"uintp"} | {"bool_", "pi", "e", "inf", "nan"},
    "numba": SCALAR_TYPES | {"boolean"},
    "numba.types": SCALAR_TYPES | {"boolean"},
}
"""Each module a kernel may use, and the names it may take from it (``math.sqrt``, ``np.float64``)."""
VALUE_ATTRIBUTES = {"shape", "size", "ndim", "dtype", "x", "y", "z"}
"""Attributes of anything else (an array, a local): its shape, never a method."""
EXCEPTIONS = ("NotImplementedError", "ValueError", "IndexError", "RuntimeError", "ZeroDivisionError",
              "AssertionError")
BUILTINS = ("range", "len", "min", "max", "abs", "int", "float", "bool", "round", "divmod", "pow",
            "print") + EXCEPTIONS
"""The builtins a kernel's namespace holds (its ``__builtins__`` is exactly these)."""
STATEMENTS = (ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.While, ast.Break, ast.Continue,
              ast.Return, ast.Pass, ast.Raise, ast.Assert)
EXPRESSIONS = (ast.BoolOp, ast.BinOp, ast.UnaryOp, ast.IfExp, ast.Compare, ast.Call, ast.Constant,
               ast.Attribute, ast.Subscript, ast.Name, ast.Tuple, ast.Slice, ast.NamedExpr)
GLUE = (ast.operator, ast.unaryop, ast.cmpop, ast.boolop, ast.expr_context, ast.keyword)
ALLOWED = "its parameters and locals, constants and @cuda.jit(device=True) functions of your code, " \
          "cuda.*, math.*, numeric types and range, len, min, max, abs, int, float, bool, round, print"


class Refused(Exception):
    """A kernel the grader will not compile; ``str(refused)`` is one sentence for the learner."""


_WHAT = {ast.Import: "an import", ast.ImportFrom: "an import", ast.FunctionDef: "a def",
         ast.AsyncFunctionDef: "an async def", ast.ClassDef: "a class", ast.Assign: "an assignment",
         ast.AnnAssign: "an assignment", ast.AugAssign: "an augmented assignment", ast.For: "a for loop",
         ast.While: "a while loop", ast.If: "an if block", ast.With: "a with block", ast.Try: "a try block",
         ast.Delete: "a del statement", ast.Global: "a global statement", ast.Nonlocal: "a nonlocal statement",
         ast.Match: "a match block", ast.Expr: "an expression", ast.Lambda: "a lambda", ast.Dict: "a dict",
         ast.Set: "a set", ast.List: "a list", ast.ListComp: "a comprehension", ast.SetComp: "a comprehension",
         ast.DictComp: "a comprehension", ast.GeneratorExp: "a generator", ast.Await: "an await",
         ast.Yield: "a yield", ast.YieldFrom: "a yield", ast.JoinedStr: "an f-string",
         ast.FormattedValue: "an f-string", ast.Starred: "a *unpacking"}


def describe(node) -> str:
    """What kind of statement or expression ``node`` is, in words ("a try block")."""
    return _WHAT.get(type(node), f"a {type(node).__name__} node")


def where(node, label: str) -> str:
    line = f"line {getattr(node, 'lineno', '?')}"
    return f"{line} of {label}" if label else line


def shown(node) -> str:
    try:
        text = ast.unparse(node)
    except Exception:  # noqa: BLE001 (a node unparse cannot show)
        text = type(node).__name__
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def module_path_allowed(module: str, path: list[str]) -> bool:
    """Whether ``module.path[0].path[1]...`` is a name a kernel may use."""
    names = MODULE_NAMES.get(module, set())
    if not path or path[0] not in names:
        return False
    if module != "numba.cuda":
        return len(path) == 1
    return len(path) == 1 or (len(path) == 2 and path[1] in CUDA_MEMBERS.get(path[0], ()))


def strip_annotations(fn: ast.FunctionDef) -> None:
    """Annotations are never evaluated in a graded kernel: drop them (in place)."""
    for arg in fn.args.posonlyargs + fn.args.args:
        arg.annotation = None
    fn.returns = None
    for node in ast.walk(fn):
        for field in ("body", "orelse"):
            block = getattr(node, field, None)
            if isinstance(block, list) and any(isinstance(s, ast.AnnAssign) for s in block):
                setattr(node, field, [_unannotated(s) for s in block])


def _unannotated(stmt):
    if not isinstance(stmt, ast.AnnAssign):
        return stmt
    if stmt.value is None:
        return ast.copy_location(ast.Pass(), stmt)
    return ast.copy_location(ast.Assign(targets=[stmt.target], value=stmt.value), stmt)


def check_function(fn: ast.FunctionDef, label: str, meaning) -> set[str]:
    """The global names ``fn`` reads, once every node of it is one a kernel may use (else
    ``Refused``). ``meaning(name)`` is the top-level meaning of a name in the learner's source:
    ("module", qualified), ("object", qualified), ("constant", value), ("device", name),
    ("kernel", name), or raises ``Refused``. ``fn`` has no annotations (``strip_annotations``)."""
    args = fn.args
    if args.vararg or args.kwarg or args.kwonlyargs:
        raise Refused(f"{fn.name} ({where(fn, label)}) takes *args, **kwargs or keyword-only "
                      "arguments: a kernel takes plain positional parameters")
    try:
        args.defaults = [ast.copy_location(ast.Constant(constant(d, meaning, label)), d) for d in args.defaults]
    except Refused as why:
        raise Refused(f"{fn.name} ({where(fn, label)}) has a default value that is not a constant: {why}") from None
    local = {a.arg for a in args.posonlyargs + args.args}
    local |= {n.id for n in ast.walk(ast.Module(body=fn.body, type_ignores=[]))
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    used: set[str] = set()
    for stmt in fn.body:
        for node in ast.walk(stmt):
            _check_node(node, fn.name, label, local, meaning, used)
    return used


def _meaning(meaning, node, global_name, name, label):
    """``meaning(global_name)``, its refusal told as this kernel's, at this node."""
    try:
        return meaning(global_name)
    except Refused as why:
        _refuse(node, name, label, str(why))


def _refuse(node, name: str, label: str, why: str):
    raise Refused(f"{name}: {where(node, label)} uses `{shown(node)}`, {why}")


def _check_node(node, name, label, local, meaning, used) -> None:
    if isinstance(node, ast.stmt) and not isinstance(node, STATEMENTS):
        _refuse(node, name, label, f"{describe(node)}, which a graded kernel may not contain (no imports, "
                                   "nested functions or classes, try, with, global or del)")
    if isinstance(node, ast.expr) and not isinstance(node, EXPRESSIONS):
        _refuse(node, name, label, f"{describe(node)}, which a graded kernel may not contain "
                                   "(no lambdas, lists, dicts, comprehensions, f-strings or *args)")
    if not isinstance(node, (ast.stmt, ast.expr) + GLUE):
        _refuse(node, name, label, "which a graded kernel may not contain")
    if isinstance(node, ast.Name):
        if node.id.startswith("__"):
            _refuse(node, name, label, "a name a kernel may not use")
        if isinstance(node.ctx, ast.Load) and node.id not in local:
            kind = _meaning(meaning, node, node.id, name, label)[0]
            if kind == "kernel":
                _refuse(node, name, label, "another kernel: a kernel can only call @cuda.jit(device=True) functions")
            used.add(node.id)
    elif isinstance(node, ast.Attribute):
        _check_attribute(node, name, label, local, meaning)
    elif isinstance(node, ast.Call):
        if not isinstance(node.func, (ast.Name, ast.Attribute)):
            _refuse(node, name, label, "a call of something other than a named function")
        if any(k.arg is None for k in node.keywords):
            _refuse(node, name, label, "**kwargs, which a graded kernel may not use")
    elif isinstance(node, ast.Constant):
        if isinstance(node.value, bytes):
            _refuse(node, name, label, "a bytes literal, which a graded kernel may not use")
    elif isinstance(node, ast.Raise):
        exc = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if node.cause is not None or not (isinstance(exc, ast.Name) and exc.id in EXCEPTIONS):
            _refuse(node, name, label, "a raise of something other than a built-in exception class")


def _check_attribute(node: ast.Attribute, name, label, local, meaning) -> None:
    path, base = [node.attr], node.value
    while isinstance(base, ast.Attribute):
        path.insert(0, base.attr)
        base = base.value
    if any(part.startswith("_") for part in path):
        _refuse(node, name, label, "an attribute whose name starts with `_`, which a kernel may not use")
    if not isinstance(node.ctx, ast.Load):
        _refuse(node, name, label, "an attribute assignment, which a kernel may not make")
    if isinstance(base, ast.Name) and base.id not in local:
        kind, value = _meaning(meaning, node, base.id, name, label)
        if kind != "module":
            _refuse(node, name, label, f"an attribute of `{base.id}`, which a kernel may not take")
        if not module_path_allowed(value, path):
            _refuse(node, name, label, f"which is not among what a graded kernel may use ({ALLOWED})")
    elif node.attr not in VALUE_ATTRIBUTES:
        _refuse(node, name, label, f"an attribute a kernel may not use (of an array or a local: only "
                                   f"{', '.join(sorted(VALUE_ATTRIBUTES))})")


_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.Div: lambda a, b: a / b, ast.FloorDiv: lambda a, b: a // b, ast.Mod: lambda a, b: a % b,
           ast.Pow: lambda a, b: a ** b, ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
           ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b}
_UNARY = {ast.USub: lambda a: -a, ast.UAdd: lambda a: +a, ast.Invert: lambda a: ~a, ast.Not: lambda a: not a}
_NUMBER = (bool, int, float, complex)


def constant(node, meaning, label: str = ""):
    """The value of a module-level constant's expression: numbers, booleans, None, short strings
    and tuples of them, arithmetic on them, other constants and math's constants; else
    ``Refused`` saying which part is not."""
    def fail(why):
        raise Refused(f"`{shown(node)}` {why}")
    if isinstance(node, ast.Constant):
        if node.value is None or isinstance(node.value, _NUMBER) or (
                isinstance(node.value, str) and len(node.value) <= 200):
            return node.value
        fail("is not a number, boolean, None, short string or tuple of them")
    if isinstance(node, ast.Tuple) and len(node.elts) <= 64:
        return tuple(constant(e, meaning, label) for e in node.elts)
    if isinstance(node, ast.Name):
        try:
            kind, value = meaning(node.id)
        except Refused as why:
            raise Refused(str(why).removeprefix("but ")) from None
        if kind == "constant":
            return value
        if kind == "object" and value.startswith("math.") and isinstance(getattr(math, value[5:], None), float):
            return getattr(math, value[5:])
        fail("is not a module-level constant")
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        try:
            kind, value = meaning(node.value.id)
        except Refused as why:
            raise Refused(str(why).removeprefix("but ")) from None
        if kind == "module" and value == "math" and isinstance(getattr(math, node.attr, None), float):
            return getattr(math, node.attr)
        fail("is not one of math's constants")
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        operand = constant(node.operand, meaning, label)
        if not isinstance(operand, _NUMBER):
            fail("is arithmetic on something other than numbers")
        return _UNARY[type(node.op)](operand)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        a, b = constant(node.left, meaning, label), constant(node.right, meaning, label)
        if not (isinstance(a, _NUMBER) and isinstance(b, _NUMBER)):
            fail("is arithmetic on something other than numbers")
        if isinstance(node.op, (ast.Pow, ast.LShift, ast.RShift)) and abs(b) > 64:
            fail("has an exponent or a shift above 64")
        try:
            value = _BINARY[type(node.op)](a, b)
        except (ArithmeticError, ValueError, TypeError) as e:
            fail(f"raises {type(e).__name__}")
        if isinstance(value, int) and abs(value) > 2 ** 64:
            fail("is an integer past 64 bits")
        return value
    fail("is not a number, boolean, None, short string or tuple of them, nor arithmetic on such "
         "constants")
