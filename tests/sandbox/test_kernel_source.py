"""What the grader compiles of a learner's CUDA kernels (grader/sandbox/kernel_source.py and
kernel_rules.py): every honest style a kernel is written in, and a sentence for everything a
kernel may not reference (issue 35). Trusted test strings, read in this process."""
import os

import numpy as np
import pytest

from backprop_traps.grader.sandbox import kernel_source

HEAD = "import math\nimport numpy as np\nfrom numba import cuda\nimport numba\n"

ACCEPTED = {
    "plain": "@cuda.jit\ndef k(a, b):\n    i = cuda.grid(1)\n    if i < a.size:\n        b[i] = a[i] * 2.0\n",
    "constants and a device function": (
        "N = 4\nM = N * 2 + 1\nSHAPE = (2, -N)\n@cuda.jit(device=True)\ndef f(x):\n    return x * M\n"
        "@cuda.jit\ndef k(a, b):\n    i = cuda.grid(1)\n    b[i] = f(a[i]) + math.sqrt(4.0) + np.float64(N) + SHAPE[0]\n"),
    "shared memory and a barrier": (
        "@cuda.jit\ndef k(a, b):\n    s = cuda.shared.array(8, numba.float64)\n    t = cuda.threadIdx.x\n"
        "    s[t] = a[t]\n    cuda.syncthreads()\n    b[t] = s[7 - t]\n"),
    "aliases": "from numba import cuda as cu\nfrom math import sqrt, pi\n@cu.jit\ndef k(a, b):\n    b[cu.grid(1)] = sqrt(a[0]) * pi\n",
    "numba's types": ("from numba import types, float32\nimport numba.cuda\n@numba.cuda.jit\ndef k(a, b):\n"
                      "    b[0] = types.float64(a[0]) + float32(1.0)\n"),
    "an import in a try block, a signature, fastmath": (
        "try:\n    from numba import cuda\nexcept ImportError:\n    from numba import cuda\n"
        "@cuda.jit('void(float64[:], float64[:])', fastmath=True)\ndef k(a, b):\n    b[0] = a[0]\n"),
    "annotations and defaults": (
        "@cuda.jit(device=True)\ndef f(x: float, y=2) -> float:\n    z: float = x * y\n    return z\n"
        "@cuda.jit\ndef k(a, b):\n    b[0] = f(a[0])\n"),
    "a stub that raises": "@cuda.jit\ndef k(a, b):\n    raise NotImplementedError()\n",
    "grid-stride loops, atomics, local arrays": (
        "@cuda.jit\ndef k(a, b):\n    tmp = cuda.local.array(2, numba.float64)\n"
        "    for i in range(cuda.grid(1), a.size, cuda.gridsize(1)):\n        tmp[0] = a[i]\n"
        "        cuda.atomic.add(b, 0, tmp[0])\n"),
    "a later cell redefines it": "@cuda.jit\ndef k(a, b):\n    pass\n\n@cuda.jit\ndef k(a, b):\n    b[0] = 1.0\n",
}

REFUSED = {
    "a module-level list": ("T = [1, 2]\n@cuda.jit\ndef k(a, b):\n    b[0] = T[0]\n", "`T` (line 5 of cell 2) is not a constant"),
    "a module-level object": ("import sys\nM = sys.modules\n@cuda.jit\ndef k(a, b):\n    M.clear()\n", "is not a constant"),
    "a plain function": ("def f(x):\n    return x\n@cuda.jit\ndef k(a, b):\n    b[0] = f(a[0])\n", "plain function"),
    "another kernel": ("@cuda.jit\ndef g(a):\n    pass\n@cuda.jit\ndef k(a, b):\n    g(a)\n", "another kernel"),
    "a numpy function": ("@cuda.jit\ndef k(a, b):\n    b[0] = np.sum(a)\n", "`np.sum`, which is not among"),
    "a method": ("@cuda.jit\ndef k(a, b):\n    a.fill(0)\n", "`a.fill`, an attribute a kernel may not use"),
    "an attribute store": ("@cuda.jit\ndef k(a, b):\n    a.x = 0\n", "attribute assignment"),
    "a dunder attribute": ("@cuda.jit\ndef k(a, b):\n    cuda.atomic.add.__globals__.clear()\n", "starts with `_`"),
    "a dunder name": ("@cuda.jit\ndef k(a, b):\n    b[0] = __builtins__\n", "a name a kernel may not use"),
    "an import": ("@cuda.jit\ndef k(a, b):\n    import sys\n", "an import, which a graded kernel may not contain"),
    "exec": ("@cuda.jit\ndef k(a, b):\n    exec('b[0] = 1')\n", "`exec` is a builtin a graded kernel may not use"),
    "globals": ("@cuda.jit\ndef k(a, b):\n    globals()\n", "`globals` is a builtin"),
    "a nested def": ("@cuda.jit\ndef k(a, b):\n    def g():\n        pass\n", "a def, which"),
    "a lambda": ("@cuda.jit\ndef k(a, b):\n    g = lambda: 0\n", "a lambda"),
    "try": ("@cuda.jit\ndef k(a, b):\n    try:\n        b[0] = 1\n    except Exception:\n        pass\n", "a try block"),
    "global": ("@cuda.jit\ndef k(a, b):\n    global G\n    G = 1\n", "a global statement"),
    "an f-string": ("@cuda.jit\ndef k(a, b):\n    print(f'{a}')\n", "an f-string"),
    "**kwargs": ("@cuda.jit\ndef k(a, b):\n    print(**a)\n", "**kwargs"),
    "*args": ("@cuda.jit\ndef k(*a):\n    pass\n", "takes *args"),
    "a call of a subscript": ("@cuda.jit\ndef k(a, b):\n    a[0](1)\n", "a call of something other than a named function"),
    "raising something else": ("@cuda.jit\ndef k(a, b):\n    raise SystemExit\n", "a raise of something other"),
    "a huge constant": ("N = 10 ** 100000\n@cuda.jit\ndef k(a, b):\n    b[0] = N\n", "exponent or a shift above 64"),
    "a constant defined by itself": ("A = B\nB = A\n@cuda.jit\ndef k(a, b):\n    b[0] = A\n", "defined in terms of itself"),
    "cuda's names imported apart": ("from numba.cuda import grid\n@cuda.jit\ndef k(a, b):\n    b[grid(1)] = 0\n",
                                    "import cuda and write cuda.<name>"),
    "not in the source": ("", "k is not defined at the top level of your code"),
    "inside a block": ("if True:\n    @cuda.jit\n    def k(a, b):\n        pass\n", "bound inside a block"),
    "bound two ways": ("@cuda.jit\ndef k(a, b):\n    pass\nfor k in range(2):\n    pass\n", "bound more than one way"),
    "an object": ("class K:\n    pass\nk = K()\n", "bound by an assignment"),
    "no decorator": ("def k(a, b):\n    pass\n", "a plain function, not compiled with @cuda.jit"),
    "a device function": ("@cuda.jit(device=True)\ndef k(a, b):\n    pass\n", "a device function, not a kernel"),
    "a second decorator": ("def swap(f):\n    return f\n@swap\n@cuda.jit\ndef k(a, b):\n    pass\n", "decorated more than once"),
    "another decorator": ("def swap(f):\n    return f\n@swap\ndef k(a, b):\n    pass\n", "is decorated with `@swap`"),
    "a decorator from elsewhere": ("import functools\n@functools.cache\ndef k(a, b):\n    pass\n", "not numba's @cuda.jit"),
    "cuda rebound": ("class cuda:\n    jit = None\n@cuda.jit\ndef k(a, b):\n    pass\n", "`cuda` is bound by a class"),
}


def extract(body: str):
    return kernel_source.extract([["cell 2", HEAD + body, ""]], ["k"])


@pytest.mark.parametrize("body", list(ACCEPTED.values()), ids=list(ACCEPTED))
def test_honest_kernels_are_compiled(body):
    program = extract(body)
    assert program.refused == {} and program.kernels == ["k"]


@pytest.mark.parametrize("body, says", list(REFUSED.values()), ids=list(REFUSED))
def test_what_a_kernel_may_not_reference_is_refused_with_a_sentence(body, says):
    refused = extract(body).refused["k"]
    assert says in refused, refused
    assert refused.endswith(".") and "\n" not in refused


def test_a_cell_that_is_not_python_is_read_through_its_fallback_and_named_otherwise():
    cell = ["cell 4", "%%time\n" + HEAD + ACCEPTED["plain"], HEAD + ACCEPTED["plain"]]
    assert kernel_source.extract([cell], ["k"]).refused == {}
    broken = kernel_source.extract([["cell 4", "def (", ""]], ["k"]).refused["k"]
    assert "cells that are not Python: cell 4" in broken


def test_a_deeply_nested_kernel_is_refused_not_a_crash():
    deep = "@cuda.jit\ndef k(a, b):\n    b[0] = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    assert "k" in extract(deep).refused


def test_the_compiled_kernel_sees_only_what_it_reads(monkeypatch):
    monkeypatch.setenv("NUMBA_ENABLE_CUDASIM", "1")
    assert os.environ["NUMBA_ENABLE_CUDASIM"] == "1"
    program = extract("SECRET = 7\nN = 2\n" + ACCEPTED["constants and a device function"])
    kernel = kernel_source.build(program)["k"]
    namespace = kernel.py_func.__globals__
    assert set(namespace) - {"__builtins__", "__name__"} == {"k", "f", "cuda", "math", "np", "N", "M", "SHAPE",
                                                           kernel_source.kernel_integers.HELPER}  # the GPU's integer widths
    assert set(namespace["__builtins__"]) == set(kernel_source.kernel_rules.BUILTINS)
    b = np.zeros(1)
    kernel[1, 1](np.array([1.0]), b)
    assert b[0] == 9.0 + 2.0 + 4.0 + 2.0
