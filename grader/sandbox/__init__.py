"""The trust boundary: learner code runs only in a limited child process (see DESIGN.md).

``process.Sandbox`` is the grader's side; ``worker.py`` is the child's main program and
imports nothing from the kit (it is run by path, before the filesystem is narrowed).
"""
