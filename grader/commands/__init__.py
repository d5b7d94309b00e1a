"""The subcommands of `grade`, one module each; ``backprop_traps.grader.cli`` registers them.

Each module imports only click at the top and its real work inside the command, so that
`grade FILE` (the learner's path) and `grade --help` stay fast.
"""
