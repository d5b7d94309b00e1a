# expect: trap=val-gap-conflated
# Every run whose validation loss leaves the training loss is read, but the two causes are
# swapped both ways: a repeated batch is called BatchNorm in training mode and the reverse.
_right_diagnose = diagnose
_SWAP = {"repeated-batch": "bn-train-mode", "bn-train-mode": "repeated-batch"}


def diagnose(trace):
    cause = _right_diagnose(trace)
    return _SWAP.get(cause, cause)
