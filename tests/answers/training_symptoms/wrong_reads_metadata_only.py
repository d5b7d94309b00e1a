# expect: wrong
# not named: nan-timing-ignored initial-loss-ignored smooth-loss-trusted val-gap-conflated end-of-run-only
# A diagnose that reads only what every trace holds alike (the classes, the depth and when it
# changes, the number of columns, the validation steps), never a loss or a gradient: it must
# score 0 on every diagnosis (tests/questions/test_training_symptoms.py).
CAUSES = ["healthy", "init-scale", "log-zero", "fp16-overflow", "repeated-batch", "bn-train-mode",
          "block-not-identity"]


def diagnose(trace):
    grown = int(np.argmax(np.diff(trace["depth"]) > 0))
    key = trace["num_classes"] + 3 * trace["grad_norms"].shape[1] + grown + len(trace["val_steps"])
    return CAUSES[key % len(CAUSES)]
