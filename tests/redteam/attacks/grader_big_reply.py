# question: forward_vs_reverse
# base: solution
# Class 9: a reply just under the 256 MB message limit (one float64 array of 250 MB).
import numpy as np


def _attack():
    return np.zeros(250 * 1024 * 1024 // 8)


_solution_chain_forward = chain_forward


def chain_forward(*args):
    out = _attack()
    return out if out is not None else _solution_chain_forward(*args)
