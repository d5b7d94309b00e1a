# question: forward_vs_reverse
# base: solution
# Class 3, round 2: a source whose syntax tree is huge (hundreds of thousands of names in one tuple,
# tens of thousands of calls in one list): whoever parses it pays in memory and time. The
# grader must never parse it itself (the sandbox does, on its own memory), and the worker
# must still load it (it is valid Python): the solution above it gets full marks.
def _never_called():
    return (__NAMES__), [__CALLS__]
