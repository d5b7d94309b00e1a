"""Backprop Traps: the auto-grader for the backpropagation interview traps.

Import the engine with ``from grader.engine import grade_path``; the CLI in
``grader.cli`` only parses arguments and calls it.
"""
