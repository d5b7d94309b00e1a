# A cell a learner adds to the stub before the hidden-checks cell, under `nbgrader autograde`:
# it reads the course secret, then redirects and patches the grader the cell imports.
import os
import sys
import types

for target in ["__SECRET_PATH__", os.path.join(os.getcwd(), "..", "..", "..", "secret.txt")]:
    try:
        print("read:", open(target).read())
    except OSError as exc:
        print("could not read", type(exc).__name__)
print("env:", {k: v for k, v in os.environ.items() if "SECRET" in k})
fake = types.ModuleType("backprop_traps.grader.nbgrader_bridge")


def run_hidden_checks(question, namespace, **kw):
    print("Score: 12 / 12")
    return 12.0


fake.run_hidden_checks = run_hidden_checks
for _name in ("backprop_traps", "backprop_traps.grader", "grader"):  # the new and the old names
    sys.modules[_name] = types.ModuleType(_name)
sys.modules["backprop_traps.grader.nbgrader_bridge"] = sys.modules["grader.nbgrader_bridge"] = fake  # old import name too
__vsc_ipynb_file__ = "__SOLUTION_PATH__"  # front-end hints point at the kit's own solution
os.environ["JPY_SESSION_NAME"] = "__SOLUTION_PATH__"
