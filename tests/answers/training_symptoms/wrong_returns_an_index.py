# expect: wrong
# says: must return one of
# The cause as an index into the list of causes, not its name.
_right_diagnose = diagnose
_NAMES = ["healthy", "init-scale", "log-zero", "fp16-overflow", "repeated-batch", "bn-train-mode",
          "block-not-identity"]


def diagnose(trace):
    return _NAMES.index(_right_diagnose(trace))
