"""A learner's CUDA kernels, taken from the submission's source text and compiled by the grader.

A kernel graded as an object the learner's code built can be anything that code made: an
object with ``__getitem__``, a class that computes on the host, a kernel whose module patched
the race checker first. So the grader never takes it from the learner's namespace. In a child
where none of the learner's code has run (``source_child``), this file reads the submission's
cells as text, finds the top-level ``def`` of each kernel the contract names, checks it and
everything it reads against ``kernel_rules`` (module-level constants and device functions of
the same source, ``cuda``, ``math``, scalar types), and compiles them with ``cuda.jit`` itself,
into a namespace that holds only those names and a handful of builtins.

The meaning of a top-level name is its last plain top-level binding (``def``, ``NAME =``, an
import), as a notebook run in order would leave it; a name bound more than one way after
that (a conditional ``def``, a loop variable), or only inside a block, is refused, except an
import of the same thing (``try: from numba import cuda``). Runs in the child as text
(standard library only until ``build``), and in the kit's tests by import.
"""
import ast
import builtins
import copy
import importlib

try:
    kernel_rules, kernel_integers  # noqa: B018  (in the child the harness provides them: the kit is not there)
except NameError:
    from backprop_traps.grader.sandbox import kernel_integers, kernel_rules

Refused = kernel_rules.Refused
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp, ast.SetComp,
           ast.DictComp, ast.GeneratorExp)
_BLOCKS = ("body", "orelse", "finalbody")


class Binding:
    """One top-level binding of a name: ``kind`` is "def", "assign" (``NAME = value``), "import"
    (``target`` is the qualified name imported) or "other"; ``conditional`` inside a block."""

    def __init__(self, kind, node, label, conditional, target=None):
        self.kind, self.node, self.label, self.conditional, self.target = kind, node, label, conditional, target
        self.order = (0, 0, 0)

    def where(self):
        return kernel_rules.where(self.node, self.label)


def _stored_names(node):
    """The names a statement's or expression's own scope binds (not those of nested scopes)."""
    todo = [node]
    while todo:
        item = todo.pop()
        if isinstance(item, ast.Name) and isinstance(item.ctx, (ast.Store, ast.Del)):
            yield item.id
        elif isinstance(item, (ast.MatchAs, ast.MatchStar)) and item.name:
            yield item.name
        elif isinstance(item, ast.MatchMapping) and item.rest:
            yield item.rest
        elif isinstance(item, ast.ExceptHandler) and item.name:
            yield item.name
        if item is node or not isinstance(item, _SCOPES):
            todo.extend(ast.iter_child_nodes(item))


def _targets(stmt):
    return stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]


def _bound_by(stmt, label, conditional):
    """``(name, Binding)`` for each name ``stmt`` binds at module level."""
    if isinstance(stmt, ast.FunctionDef):
        yield stmt.name, Binding("other" if conditional else "def", stmt, label, conditional)
    elif isinstance(stmt, (ast.AsyncFunctionDef, ast.ClassDef)):
        yield stmt.name, Binding("other", stmt, label, conditional)
    elif isinstance(stmt, ast.Import):
        for alias in stmt.names:
            target = alias.name if alias.asname else alias.name.split(".")[0]
            yield alias.asname or target, Binding("import", stmt, label, conditional, target)
    elif isinstance(stmt, ast.ImportFrom):
        for alias in stmt.names:
            if alias.name != "*":  # names a star import binds are unknown: never a kernel's
                target = f"{stmt.module}.{alias.name}" if stmt.module and not stmt.level else None
                yield alias.asname or alias.name, Binding("import" if target else "other", stmt, label,
                                                          conditional, target)
    elif (isinstance(stmt, (ast.Assign, ast.AnnAssign)) and not conditional and stmt.value is not None
          and len(_targets(stmt)) == 1 and isinstance(_targets(stmt)[0], ast.Name)):
        yield _targets(stmt)[0].id, Binding("assign", stmt, label, conditional)
        for name in _stored_names(stmt.value):
            yield name, Binding("other", stmt, label, conditional)
    elif any(isinstance(getattr(stmt, block, None), list) for block in _BLOCKS + ("handlers", "cases")):
        inner = [s for block in _BLOCKS for s in getattr(stmt, block, None) or []]
        for part in getattr(stmt, "handlers", None) or getattr(stmt, "cases", None) or []:
            inner += part.body
            names = [part.name] if isinstance(part, ast.ExceptHandler) and part.name else []
            if isinstance(part, ast.match_case):
                names = list(_stored_names(part.pattern)) + list(_stored_names(part.guard or ast.Pass()))
            for name in names:  # except ... as name, a case's captures
                yield name, Binding("other", stmt, label, True)
        for field, value in ast.iter_fields(stmt):  # the header: a loop's target, with ... as x
            if field not in _BLOCKS + ("handlers", "cases") and isinstance(value, (ast.AST, list)):
                for item in value if isinstance(value, list) else [value]:
                    if isinstance(item, ast.AST):
                        for name in _stored_names(item):
                            yield name, Binding("other", stmt, label, True)
        for child in inner:
            yield from _bound_by(child, label, True)
    else:
        for name in _stored_names(stmt):
            yield name, Binding("other", stmt, label, conditional)


class Source:
    """The top-level names of a submission's cells (``[label, source, fallback]``; the fallback
    is the cell with IPython syntax blanked) and what each means to a kernel."""

    def __init__(self, cells):
        self.bindings: dict[str, list[Binding]] = {}
        self.unparsed: list[str] = []
        for index, (label, source, fallback) in enumerate(cells):
            tree = _parse(source) or (_parse(fallback) if fallback else None)
            if tree is None:
                self.unparsed.append(label or "your code")
                continue
            for position, stmt in enumerate(tree.body):
                for name, binding in _bound_by(stmt, label, False):
                    binding.order = (index, position, getattr(binding.node, "lineno", 0))
                    self.bindings.setdefault(name, []).append(binding)
        for found in self.bindings.values():
            found.sort(key=lambda b: b.order)
        self._meanings: dict[str, object] = {}

    def binding(self, name: str) -> Binding:
        """The binding that gives ``name`` its meaning (``Refused`` when there is none, or more than one)."""
        found = self.bindings.get(name)
        if not found:
            raise Refused(f"but `{name}` is not defined at the top level of your code")
        plain = [i for i, b in enumerate(found) if not b.conditional]
        tail = found[plain[-1]:] if plain else found
        if len(tail) > 1 and not (all(b.kind == "import" for b in tail) and len({b.target for b in tail}) == 1):
            lines = ", ".join(b.where() for b in tail[:3])
            raise Refused(f"but `{name}` is bound more than one way at the top level of your code ({lines}): "
                          "the grader cannot tell which one your kernel means")
        return tail[-1]

    def meaning(self, name: str):
        """("module" | "object" | "constant" | "device" | "kernel" | "builtin", value), or ``Refused``."""
        known = self._meanings.get(name)
        if isinstance(known, Refused):
            raise known
        if known is not None:
            return known
        self._meanings[name] = Refused(f"but `{name}` is a constant defined in terms of itself")
        try:
            self._meanings[name] = self._meaning(name)
        except Refused as refused:
            self._meanings[name] = refused
            raise
        return self._meanings[name]

    def _meaning(self, name: str):
        if name not in self.bindings and name in kernel_rules.BUILTINS:
            return "builtin", name
        if name not in self.bindings and hasattr(builtins, name):
            raise Refused(f"but `{name}` is a builtin a graded kernel may not use (only "
                          f"{', '.join(kernel_rules.BUILTINS)})")
        b = self.binding(name)
        if b.kind == "import":
            return _imported(name, b.target)
        if b.kind == "def":
            return self.decoration(b.node, b.label), name
        if b.kind == "assign":
            try:
                return "constant", kernel_rules.constant(b.node.value, self.meaning, b.label)
            except Refused as why:
                raise Refused(f"but `{name}` ({b.where()}) is not a constant a kernel may read: {why}") from None
            except (RecursionError, MemoryError):
                raise Refused(f"but `{name}` ({b.where()}) is too large a constant") from None
        raise Refused(f"but `{name}` is {_bound_how(b)}, not by a plain top-level def, constant or import")

    def decoration(self, fn: ast.FunctionDef, label: str) -> str:
        """"kernel" for ``@cuda.jit`` (any arguments), "device" for ``@cuda.jit(device=True)``."""
        if len(fn.decorator_list) != 1:
            raise Refused(f"but `{fn.name}` ({kernel_rules.where(fn, label)}) is " + (
                "a plain function, not compiled with @cuda.jit" if not fn.decorator_list else
                "decorated more than once: a graded kernel or device function has @cuda.jit alone"))
        decorator = fn.decorator_list[0]
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        dotted, why = self._dotted(target)
        if dotted != "numba.cuda.jit":
            raise Refused(f"but `{fn.name}` ({kernel_rules.where(fn, label)}) is decorated with "
                          f"`@{kernel_rules.shown(decorator)}`, " + (
                              "and " + why.removeprefix("but ") if why else "not numba's @cuda.jit"))
        device = False
        for keyword in decorator.keywords if isinstance(decorator, ast.Call) else []:
            if keyword.arg == "device":
                if not isinstance(keyword.value, ast.Constant):
                    raise Refused(f"but `{fn.name}` ({kernel_rules.where(fn, label)}) says device= with "
                                  "something other than True or False")
                device = bool(keyword.value.value)
        return "device" if device else "kernel"

    def _dotted(self, node):
        """(the qualified name a decorator's ``a.b.c`` means, or None; why not, when its ``a`` is refused)."""
        path = []
        while isinstance(node, ast.Attribute):
            path.insert(0, node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None, None
        try:
            b = self.binding(node.id)
        except Refused as why:
            return None, str(why)
        if b.kind == "import":
            return ".".join([b.target] + path), None
        return None, (None if b.kind == "def" else f"`{node.id}` is {_bound_how(b)}, not numba's cuda")


def _bound_how(b: Binding) -> str:
    if b.conditional:
        return f"bound inside a block ({b.where()})"
    return f"bound by {kernel_rules.describe(b.node)} ({b.where()})"


def _parse(text):
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _imported(name: str, target: str):
    if target == "numba.cuda.jit":
        return "object", target  # a decorator only: a kernel may not call it
    if target in kernel_rules.MODULE_NAMES:
        return "module", target
    module, _, attr = target.rpartition(".")
    if module != "numba.cuda" and attr in kernel_rules.MODULE_NAMES.get(module, ()):
        return "object", target
    use = " (import cuda and write cuda.<name>)" if module == "numba.cuda" else ""
    raise Refused(f"but `{name}` is imported from `{target}`, which a graded kernel may not use{use}")


class Program:
    """What ``extract`` found: for each kernel that may be compiled, every function it needs
    (``functions``: name -> (def node, cell label, device)) and the globals they read;
    ``refused``: kernel name -> the sentence that says why it is not compiled."""

    def __init__(self):
        self.kernels: list[str] = []
        self.functions: dict[str, tuple] = {}
        self.globals: dict[str, tuple] = {}
        self.refused: dict[str, str] = {}


def extract(cells, names) -> Program:
    """The kernels ``names`` of the submission's ``cells``, checked; never raises."""
    source, program = Source(cells), Program()
    for name in names:
        try:
            binding = source.binding(name)
            if binding.kind != "def":
                raise Refused(f"but `{name}` is {_bound_how(binding)}, not by a top-level def compiled "
                              "with @cuda.jit")
            if source.meaning(name)[0] != "kernel":
                raise Refused(f"but `{name}` is a device function, not a kernel")
            functions, used = _closure(name, source)
        except Refused as refused:
            program.refused[name] = _sentence(name, str(refused), source)
            continue
        except (RecursionError, MemoryError):
            program.refused[name] = f"{name} is too deeply nested for the grader to read."
            continue
        program.kernels.append(name)
        program.functions.update(functions)
        program.globals.update(used)
    return program


def _sentence(name: str, why: str, source: Source) -> str:
    if why.startswith(f"but `{name}` "):
        why = name + why[len(f"but `{name}`"):]
    elif why.startswith("but "):
        why = f"{name} cannot be graded: {why[4:]}"
    unparsed = f" (cells that are not Python: {', '.join(source.unparsed[:3])})" if source.unparsed else ""
    return why.rstrip(".") + unparsed + "."


def _closure(name: str, source: Source):
    """The kernel ``name`` and the device functions it calls, checked, with the globals they read."""
    functions, used, todo = {}, {}, [name]
    while todo:
        current = todo.pop()
        if current in functions:
            continue
        binding = source.binding(current)
        node = copy.deepcopy(binding.node)
        node.decorator_list = []
        kernel_rules.strip_annotations(node)
        for g in kernel_rules.check_function(node, binding.label, source.meaning):
            kind, value = source.meaning(g)
            if kind == "device":
                todo.append(g)
            elif kind in ("module", "object", "constant", "builtin") and value != "numba.cuda.jit":
                used[g] = (kind, value)
            else:
                raise Refused(f"but `{g}` ({source.binding(g).where()}) is not something a kernel may use")
        functions[current] = (node, binding.label, source.meaning(current)[0] == "device")
    return functions, used


def build(program: Program) -> dict:
    """The program's kernels compiled with ``cuda.jit`` (device functions with ``device=True``),
    in a namespace of exactly the names they read and ``kernel_rules.BUILTINS``."""
    from numba import cuda
    namespace = {"__builtins__": {n: getattr(builtins, n) for n in kernel_rules.BUILTINS},
                 "__name__": "graded_kernels"}
    for name, (kind, value) in program.globals.items():
        if kind == "constant":
            namespace[name] = value
        elif kind in ("module", "object"):
            namespace[name] = _load(value)
    used = {n.id for node, _, _ in program.functions.values() for n in ast.walk(node) if isinstance(n, ast.Name)}
    if kernel_integers.HELPER in used | set(program.functions) | set(program.globals):
        raise Refused(f"`{kernel_integers.HELPER}` is a name the grader keeps for itself")
    namespace[kernel_integers.HELPER] = kernel_integers.int_op
    for name, (node, label, _) in program.functions.items():
        # the GPU's integer widths, not Python's unbounded ints (kernel_integers)
        module = kernel_integers.widen(ast.Module(body=[copy.deepcopy(node)], type_ignores=[]))
        exec(compile(module, f"<{label}>" if label else "<submission>", "exec"), namespace)
    for name, (_, _, device) in program.functions.items():
        namespace[name] = cuda.jit(device=True)(namespace[name]) if device else cuda.jit(namespace[name])
    return {name: namespace[name] for name in program.kernels}


def _load(qualified: str):
    if qualified in kernel_rules.MODULE_NAMES:
        return importlib.import_module(qualified)
    module, _, attr = qualified.rpartition(".")
    return getattr(importlib.import_module(module), attr)
