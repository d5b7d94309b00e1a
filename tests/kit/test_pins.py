"""Issue 38, item 10: README command 2 must work verbatim on a fresh machine that reaches
only PyPI. A pin with a local version label (`torch==2.13.0+cpu`) names a build PyPI does not
have, so pip stopped with "no matching distribution"."""
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]


def _requirements():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    yield from project["dependencies"]
    for extra in project["optional-dependencies"].values():
        yield from extra


def test_no_pin_names_a_local_version_label():
    local = [r for r in _requirements() for spec in Requirement(r).specifier if "+" in spec.version]
    assert not local, f"pins with a local version label, which PyPI never has: {local}"


# What each platform's pip sees (PEP 508 marker variables), checked against PyPI on 2026-12-02
# with `pip download --no-deps --only-binary=:all: --platform P --python-version V NAME==X`.
LINUX = {"sys_platform": "linux", "platform_machine": "x86_64", "platform_release": "6.8.0-45-generic",
         "python_version": "3.11"}
WINDOWS = {"sys_platform": "win32", "platform_machine": "AMD64", "platform_release": "10", "python_version": "3.11"}
MAC_ARM_14 = {"sys_platform": "darwin", "platform_machine": "arm64", "platform_release": "23.1.0",
              "python_version": "3.11"}
MAC_ARM_13 = {**MAC_ARM_14, "platform_release": "22.6.0"}
MAC_INTEL = {"sys_platform": "darwin", "platform_machine": "x86_64", "platform_release": "23.1.0",
             "python_version": "3.11"}
PLATFORMS = {"Linux": LINUX, "Windows": WINDOWS, "macOS 14 on Apple silicon": MAC_ARM_14,
             "macOS 13 on Apple silicon": MAC_ARM_13, "an Intel Mac": MAC_INTEL}
TORCH_WHEELS = {"Linux": True, "Windows": True, "macOS 14 on Apple silicon": True,
                "macOS 13 on Apple silicon": False, "an Intel Mac": False}
"""Whether PyPI has a torch 2.13.0 wheel there (macOS: Apple silicon, macosx_14_0 tags only)."""
NUMBA_CUDA_WHEELS = {"Linux": "0.30.4", "Windows": "0.30.4", "macOS 14 on Apple silicon": "0.20.1",
                     "macOS 13 on Apple silicon": "0.20.1", "an Intel Mac": "0.20.1"}
"""The newest numba-cuda with a wheel there: on macOS 0.20.1, the last pure-Python one."""


def _applying(name, extra, env):
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    lines = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    found = [Requirement(r) for r in lines if Requirement(r).name == name]
    return [r for r in found if r.marker is None or r.marker.evaluate({**env, "extra": extra or ""})]


def test_every_requirement_parses_and_the_test_extra_pins_torch_where_pypi_has_it():
    """Issue 51: torch==2.13.0 has no Intel-Mac wheel (PyPI's last is 2.2.2) and none for macOS
    before 14: there pip must skip torch (its tests skip), everywhere else install exactly it."""
    for where, env in PLATFORMS.items():
        torch = _applying("torch", "test", env)
        if TORCH_WHEELS[where]:
            assert [str(r.specifier) for r in torch] == ["==2.13.0"], where
        else:
            assert not torch, f"{where}: PyPI has no torch 2.13.0 wheel there, so pip would stop"


def test_numba_cuda_is_pinned_to_versions_with_a_wheel_on_every_platform():
    """Issue 51: on a Mac, numba-cuda >= 0.21 has no wheel and its sdists need cuda-bindings,
    which has none: pip backtracked through sdists. The pins admit only versions with a wheel."""
    for where, env in PLATFORMS.items():
        pins = _applying("numba-cuda", None, env)
        assert pins, where
        newest = NUMBA_CUDA_WHEELS[where]
        assert all(r.specifier.contains(newest) for r in pins), where
        if env["sys_platform"] == "darwin":
            assert not any(r.specifier.contains("0.21.0") for r in pins), f"{where}: 0.21 has no wheel there"


def test_the_gpu_extra_asks_only_where_numba_cuda_mlir_has_a_wheel():
    """numba-cuda-mlir 0.6 requires Python >= 3.11; the project says >= 3.10."""
    assert _applying("numba-cuda-mlir", "gpu", LINUX)
    assert not _applying("numba-cuda-mlir", "gpu", {**LINUX, "python_version": "3.10"})
    assert not _applying("numba-cuda-mlir", "gpu", MAC_ARM_14)


def test_the_readme_states_each_limit_it_does_not_lift():
    readme = " ".join((REPO / "README.md").read_text().split())
    assert "Intel Mac" in readme and "macOS 14" in readme  # where torch is left out
    assert "`[gpu]` needs Python 3.11" in readme
