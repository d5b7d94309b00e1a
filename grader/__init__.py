"""Backprop Traps: the auto-grader for the backpropagation interview traps.

Import the engine with ``from backprop_traps.grader.engine.run import grade_path``; the CLI in
``backprop_traps.grader.cli`` only parses arguments and calls it.
"""

import os as _os

# The grader's own numpy work (references, finite differences) is many small matmuls: BLAS
# threads only spin against each other and the sandboxed child on a small machine (a
# (2048, 32) @ (32, 32) product is 25x slower with 2 threads under load). One thread unless
# the user set otherwise; this must run before numpy is first imported.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    _os.environ.setdefault(_var, "1")
del _var
