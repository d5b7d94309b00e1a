"""``python -m backprop_traps.grader.batch SOURCE -o OUTDIR``: the same as ``grade batch`` (handy on a
cluster node where the ``grade`` script is not on the PATH)."""
from backprop_traps.grader.commands.batch import batch

if __name__ == "__main__":
    batch(prog_name="grade batch")
