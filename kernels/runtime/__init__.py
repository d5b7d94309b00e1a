"""What every kernel module runs on, no kernel of its own: the choice of ``cuda`` (device.py),
the simulator's fixes (simulator_fixes.py), CUDA's launch limits (launch_limits.py), the dry
run that records launches without running them (dry_run.py), the solution notebooks read as
the CPU reference (solutions.py, without the grader), and the ``python -m
backprop_traps.kernels.<question>`` self check (self_check.py). Nothing is imported here."""
