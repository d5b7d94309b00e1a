# question: forward_vs_reverse
# base: solution
# Class 9: every function prints in a loop (\r, ANSI, long lines) until the grader stops
# it: the whole time budget spent printing.
import sys


def _attack():
    line = "\x1b[2K\rPASS 2/2 " + "x" * 200 + "\n"
    while True:
        sys.stdout.write(line)
        sys.stderr.write(line)


_solution_chain_forward = chain_forward


def chain_forward(*args):
    out = _attack()
    return out if out is not None else _solution_chain_forward(*args)
