"""Issue 38, item 10: README command 2 must work verbatim on a fresh machine that reaches
only PyPI. A pin with a local version label (`torch==2.13.0+cpu`) names a build PyPI does not
have, so pip stopped with "no matching distribution"."""
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parent.parent


def _requirements():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    yield from project["dependencies"]
    for extra in project["optional-dependencies"].values():
        yield from extra


def test_no_pin_names_a_local_version_label():
    local = [r for r in _requirements() for spec in Requirement(r).specifier if "+" in spec.version]
    assert not local, f"pins with a local version label, which PyPI never has: {local}"


def test_every_requirement_parses_and_the_test_extra_pins_torch_for_every_platform():
    reqs = [Requirement(r) for r in _requirements()]
    torch = [r for r in reqs if r.name == "torch"]
    assert torch and all(r.marker is None for r in torch), "one torch pin, on every platform"
