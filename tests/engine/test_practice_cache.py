"""The practice cache (issue 47, item 3): work that does not depend on the learner (the sixteen
runs training_symptoms trains per seed) is kept between a learner's tries, and can never change
a course's points. A course never reads it, whatever it holds; in practice an entry is believed
only when it holds exactly the arrays declared, read the bounded way; the folder stays bounded.
"""
import json
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backprop_traps.grader.checks.training_symptoms import runs, runs_read
from backprop_traps.grader.engine import practice_cache

SEED = 4321


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(practice_cache.ENV, str(tmp_path / "cache"))
    runs.trace.cache_clear()
    yield tmp_path / "cache"
    runs.trace.cache_clear()


def entry(cause, index, seed=SEED):
    return practice_cache._path("training_symptoms", runs._version(), f"{seed}-{cause}-{index}")


def same_trace(a, b):
    assert set(a) == set(b)
    for key in a:
        if isinstance(a[key], np.ndarray):
            assert a[key].dtype == b[key].dtype and a[key].shape == b[key].shape
            np.testing.assert_array_equal(a[key], b[key])  # NaN and inf where the other has them
            assert not b[key].flags.writeable
        else:
            assert a[key] == b[key] and type(a[key]) is type(b[key])


def test_a_kept_run_reads_back_exactly_as_trained(cache):
    for cause in ("log-zero", "fp16-overflow", "healthy"):  # NaN, inf and finite losses
        trained = runs.trained(SEED, cause, 0)
        first = runs.trace(SEED, cause, 0, practice=True)  # trains and keeps it
        same_trace(trained, first)
        assert entry(cause, 0).is_file()
        runs.trace.cache_clear()
        same_trace(trained, runs.trace(SEED, cause, 0, practice=True))  # read back


def test_a_course_never_reads_or_writes_the_cache(cache):
    # a learner plants a forged entry: the healthy run replaced by a log-zero one
    forged = runs.trained(SEED, "log-zero", 0)
    practice_cache.store("training_symptoms", runs._version(), f"{SEED}-healthy-0", forged)
    course = runs.trace(SEED, "healthy", 0, practice=False)
    assert not np.isnan(course["loss"]).any()  # trained here: the forgery changed nothing
    assert not entry("init-scale", 1).exists()
    runs.trace(SEED, "init-scale", 1, practice=False)
    assert not entry("init-scale", 1).exists()  # and a course keeps nothing


def test_a_grading_is_practice_only_without_a_course(cache, tmp_path, monkeypatch):
    from backprop_traps.grader.engine.run import grade_path
    from conftest import solution_source
    src = tmp_path / "answer.py"
    src.write_text("# question: training_symptoms\n" + solution_source("training_symptoms"))
    monkeypatch.setenv("BACKPROP_TRAPS_SECRET", "a course")
    course = grade_path(src, seed=SEED)
    assert course.score == course.max_score and not cache.exists()
    monkeypatch.delenv("BACKPROP_TRAPS_SECRET")
    practice = grade_path(src, seed=SEED)
    assert practice.score == practice.max_score
    assert len(list(cache.rglob("*.json"))) == len(runs_read())  # every run of this seed, once


def test_an_entry_that_is_not_exactly_a_trace_is_trained_again(cache):
    trained = runs.trained(SEED, "healthy", 1)
    path = entry("healthy", 1)
    path.parent.mkdir(parents=True)
    good = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in trained.items()}
    bad = [
        {**good, "extra": 1},
        {k: v for k, v in good.items() if k != "depth"},
        {**good, "loss": good["loss"][:-1]},
        {**good, "num_classes": "7"},
        {**good, "num_classes": True},
        {**good, "grad_norms": [[1.0]]},
        {**good, "val_loss": [[[[[[1.0]]]]]]},
        [good],
    ]
    for forged in bad:
        path.write_text(json.dumps(forged))
        runs.trace.cache_clear()
        same_trace(trained, runs.trace(SEED, "healthy", 1, practice=True))
    path.write_text("{not json")
    runs.trace.cache_clear()
    same_trace(trained, runs.trace(SEED, "healthy", 1, practice=True))


def test_links_fifos_and_huge_entries_are_not_read(cache):
    trained = runs.trained(SEED, "healthy", 2)
    path = entry("healthy", 2)
    path.parent.mkdir(parents=True)
    target = path.parent / "elsewhere.json"
    target.write_text(json.dumps({k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in trained.items()}))
    path.symlink_to(target)
    assert practice_cache.load("training_symptoms", runs._version(), f"{SEED}-healthy-2", runs.schema()) is None
    path.unlink()
    os.mkfifo(path)
    assert practice_cache.load("training_symptoms", runs._version(), f"{SEED}-healthy-2", runs.schema()) is None
    path.unlink()
    path.write_text(" " * (practice_cache.MAX_ENTRY + 1))
    assert practice_cache.load("training_symptoms", runs._version(), f"{SEED}-healthy-2", runs.schema()) is None


JSONISH = st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
                       lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=10), inner, max_size=7),
                       max_leaves=40)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from(sorted(runs.schema()) + ["x"]), JSONISH, max_size=7))
def test_any_entry_loads_as_a_trace_of_the_schema_or_not_at_all(cache, raw):
    path = entry("healthy", 3)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(raw))
    got = practice_cache.load("training_symptoms", runs._version(), f"{SEED}-healthy-3", runs.schema())
    if got is not None:
        for key, (dtype, shape) in runs.schema().items():
            if shape == ():
                assert type(got[key]) is int
            else:
                assert got[key].dtype == np.dtype(dtype) and got[key].ndim == len(shape)
                assert all(w is None or g == w for g, w in zip(got[key].shape, shape))


def test_the_folder_stays_bounded_and_off_means_off(cache, monkeypatch):
    monkeypatch.setattr(practice_cache, "MAX_BYTES", 10_000)
    cache.mkdir(parents=True)
    neighbour = cache / "kernels_static-old.json"  # another tool's file in the same folder
    neighbour.write_text("{}" + " " * 20_000)
    os.utime(neighbour, (1, 1))
    for i in range(20):
        practice_cache.store("t", "v", f"e{i}", {"a": np.zeros(100)})
        os.utime(cache / "practice" / "t" / "v" / f"e{i}.json", (1000 + i, 1000 + i))  # oldest first
    total = sum(p.stat().st_size for p in (cache / "practice").rglob("*.json"))
    assert 0 < total <= 10_000
    assert (cache / "practice" / "t" / "v" / "e19.json").exists()  # the newest stay
    assert neighbour.exists()  # only its own entries are ever removed
    monkeypatch.setenv(practice_cache.ENV, "off")
    assert practice_cache.folder() is None
    practice_cache.store("t", "v", "new", {"a": np.zeros(3)})
    assert practice_cache.load("t", "v", "e19", {"a": (np.float64, (100,))}) is None


def test_a_half_written_entry_left_by_a_stopped_writer_goes_in_time(cache):
    """prefetch.py stops its helpers once every run is in hand; one stopped between its write
    and its rename leaves a ``.part-`` file, which a later store removes once it is stale."""
    folder = cache / "practice" / "t" / "v"
    folder.mkdir(parents=True)
    old, new = folder / ".part-old", folder / ".part-new"
    old.write_text("{")
    new.write_text("{")
    os.utime(old, (1, 1))
    practice_cache.store("t", "v", "e", {"a": np.zeros(3)})
    assert not old.exists() and new.exists()  # a writer still at work keeps its file
    assert (folder / "e.json").exists()
