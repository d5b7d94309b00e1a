# Not a named trap: the learner's own helpers count nothing; the grader's copies replace them.
def matvec(A, v):
    return A @ v


def vecmat(u, A):
    return u @ A


def matmul(A, B):
    return A @ B


def take_multiply_adds():
    return 0
