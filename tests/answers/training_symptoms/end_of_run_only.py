# Trap end-of-run-only: the run is judged by where it ends; one that jumped when a block was
# added and then recovered looks healthy there.
_right_diagnose = diagnose


def diagnose(trace):
    answer = _right_diagnose(trace)
    return "healthy" if answer == "block-not-identity" else answer
