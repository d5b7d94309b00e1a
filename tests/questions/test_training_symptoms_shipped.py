"""training_symptoms' runs for the default seed ship with the kit (checks/training_symptoms/
shipped.py): the file is what this code trains, a grading with that seed trains nothing, and a
file that is stale, malformed or hostile is read as absent (every run is then trained)."""
import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from backprop_traps.grader.checks import training_symptoms
from backprop_traps.grader.checks.training_symptoms import runs, runs_read, shipped
from backprop_traps.grader.engine.run import DEFAULT_SEED
from conftest import graded_in_process


@pytest.fixture
def shipped_at(tmp_path, monkeypatch):
    """Point the shipped file at ``tmp_path`` (nothing cached); undone after the test."""
    def at(content: bytes | None = None):
        path = tmp_path / "default_runs.npz"
        if content is not None:
            path.write_bytes(content)
        monkeypatch.setattr(shipped, "FILE", path)
        shipped._read.cache_clear()
        runs.trace.cache_clear()
        return path
    yield at
    shipped._read.cache_clear()
    runs.trace.cache_clear()


def test_the_file_is_made_by_this_code_and_holds_every_run_the_checks_read():
    assert not training_symptoms.shipped_stale(), "training_symptoms' default_runs.npz is stale: run `grade release`"
    assert sorted(shipped.runs()["runs"]) == runs_read()
    assert shipped.runs()["seed"] == DEFAULT_SEED


def test_each_run_is_bit_for_bit_what_this_machine_trains():
    with np.load(shipped.FILE, allow_pickle=False) as data:
        made_with = str(data["numpy"])
    if made_with != np.__version__:
        pytest.skip(f"made with numpy {made_with}, here {np.__version__}: its generators may draw otherwise")
    for cause, index in runs_read():
        kept, fresh = runs.shipped_trace(DEFAULT_SEED, cause, index), runs.trained(DEFAULT_SEED, cause, index)
        assert set(kept) == set(fresh)
        for key, value in fresh.items():
            if isinstance(value, np.ndarray):
                assert kept[key].dtype == value.dtype and kept[key].tobytes() == value.tobytes(), (cause, index, key)
                assert not kept[key].flags.writeable
            else:
                assert kept[key] == value


def test_a_grading_with_the_default_seed_trains_nothing(monkeypatch):
    runs.trace.cache_clear()
    monkeypatch.setattr(runs, "trained", lambda *a: pytest.fail("trained, not read from the shipped file"))
    result = graded_in_process("training_symptoms", "", seed=DEFAULT_SEED)
    assert result.score == result.max_score
    assert all(runs.is_kept(DEFAULT_SEED, *run) for run in runs_read())  # prefetch starts no helper
    runs.trace.cache_clear()


def test_another_seed_is_not_in_the_file():
    assert runs.shipped_trace(DEFAULT_SEED + 1, "healthy", 0) is None


def test_a_file_made_by_other_code_is_not_believed(shipped_at, monkeypatch):
    path = shipped_at()
    training_symptoms.ship_runs(path)  # this code's runs, then the code "changes"
    assert runs.shipped_trace(DEFAULT_SEED, "healthy", 0) is not None
    monkeypatch.setattr(shipped, "digest", lambda: "0" * 16)
    shipped._read.cache_clear()
    assert training_symptoms.shipped_stale() and runs.shipped_trace(DEFAULT_SEED, "healthy", 0) is None
    trained = []
    monkeypatch.setattr(runs, "trained", lambda *a: trained.append(a) or {"made": "here"})
    assert runs.trace(DEFAULT_SEED, "healthy", 0) == {"made": "here"} and trained


def _npz(arrays: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_a_run_of_the_wrong_shape_spoils_the_file(shipped_at):
    good = {k: v for k, v in np.load(shipped.FILE, allow_pickle=False).items()}
    good["healthy/0/loss"] = good["healthy/0/loss"][:10]
    shipped_at(_npz(good))
    assert training_symptoms.shipped_stale()


def test_a_file_past_its_size_cap_is_not_read(shipped_at, monkeypatch):
    shipped_at(shipped.FILE.read_bytes())
    assert not training_symptoms.shipped_stale()
    monkeypatch.setattr(shipped, "MAX_BYTES", 1000)
    shipped._read.cache_clear()
    assert training_symptoms.shipped_stale()


def test_an_object_array_is_never_unpickled(shipped_at):
    shipped_at(_npz({"digest": np.array(shipped.digest()), "seed": np.array(DEFAULT_SEED),
                     "healthy/0/loss": np.array([object()], dtype=object)}))
    assert training_symptoms.shipped_stale()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=600),
                 st.dictionaries(st.sampled_from(["digest", "seed", "numpy", "healthy/0/loss", "healthy/0/x",
                                                  "a/b", "healthy/x/loss", "nope/0/loss"]),
                                 st.one_of(st.integers(-5, 5).map(np.array), st.text(max_size=5).map(np.array),
                                           st.lists(st.floats(), max_size=4).map(np.array)),
                                 max_size=5).map(_npz)))
def test_any_file_reads_as_runs_or_as_absent_without_raising(shipped_at, content):
    shipped_at(content)
    assert runs.shipped_trace(DEFAULT_SEED, "healthy", 0) is None
