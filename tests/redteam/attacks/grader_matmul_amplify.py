# question: forward_vs_reverse
# base: solution
# Class 9 (the grader process itself): the grader-side matmul service asked for the outer
# product of two int8 vectors (9000, 1) x (1, 9000): 18 KB sent, 648 MB of float64 made,
# held and sent back by the grader, once per call.
import numpy as np


def _attack():
    try:
        _grader_ask("matmul", np.ones((9000, 1), dtype=np.int8), np.ones((1, 9000), dtype=np.int8))
    except Exception as e:  # noqa: BLE001
        print("refused", e)


_solution_chain_forward = chain_forward


def chain_forward(*args):
    out = _attack()
    return out if out is not None else _solution_chain_forward(*args)
