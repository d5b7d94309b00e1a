"""A first try's runs trained on more than one core (training_symptoms/prefetch.py): the runs
kept are the bits the grader trains alone, a helper that cannot start or dies changes nothing
but the time, and only practice with the cache on ever starts one."""
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

from backprop_traps.grader.checks import training_symptoms as question
from backprop_traps.grader.checks.training_symptoms import prefetch, runs
from backprop_traps.grader.engine import practice_cache

SEED = 4242
PAIRS = [("healthy", 0), ("init-scale", 0), ("log-zero", 1), ("fp16-overflow", 0), ("repeated-batch", 1),
         ("init-scale", 2)]


@pytest.fixture
def fresh(tmp_path, monkeypatch):
    """An empty practice cache, nothing remembered in this process, and a record of helpers."""
    monkeypatch.setenv(practice_cache.ENV, str(tmp_path / "cache"))
    runs.trace.cache_clear()
    monkeypatch.setattr(prefetch, "_DONE", set())
    started = []
    real_start = prefetch._start

    def start(seed, share, where):
        proc = real_start(seed, share, where)
        started.append((share, proc))
        return proc
    monkeypatch.setattr(prefetch, "_start", start)
    yield started
    runs.trace.cache_clear()


def same_trace(a: dict, b: dict) -> bool:
    return set(a) == set(b) and all(
        np.asarray(a[k]).dtype == np.asarray(b[k]).dtype and np.asarray(a[k]).tobytes() == np.asarray(b[k]).tobytes()
        for k in a)


def alone(pairs):
    return {p: runs.trained(SEED, *p) for p in pairs}


def test_helpers_keep_the_bits_the_grader_trains_alone(fresh, monkeypatch):
    monkeypatch.setattr(prefetch, "cores", lambda: 3)  # two helpers, whatever this machine has
    prefetch.train_all(SEED, PAIRS)
    assert len(fresh) == 2 and all(proc is not None for _, proc in fresh)
    assert all(proc.returncode is not None for _, proc in fresh)  # stopped, none left behind
    want = alone(PAIRS)
    runs.trace.cache_clear()
    for pair in PAIRS:
        assert runs.is_kept(SEED, *pair)
        assert same_trace(runs.trace(SEED, *pair, practice=True), want[pair])


def test_a_helper_that_cannot_start_leaves_its_runs_here(fresh, monkeypatch):
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    monkeypatch.setattr(prefetch.sys, "executable", "/nonexistent/python")
    prefetch.train_all(SEED, PAIRS)
    assert [proc for _, proc in fresh] == [None]
    want = alone(PAIRS)
    for pair in PAIRS:
        assert same_trace(runs.trace(SEED, *pair, practice=True), want[pair])


def test_a_helper_that_dies_leaves_its_runs_here(fresh, monkeypatch):
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    real = subprocess.Popen

    def dies(argv, **kw):
        return real(["sh", "-c", "exit 3"], **kw)
    monkeypatch.setattr(prefetch.subprocess, "Popen", dies)
    prefetch.train_all(SEED, PAIRS)
    want = alone(PAIRS)
    for pair in PAIRS:
        assert same_trace(runs.trace(SEED, *pair, practice=True), want[pair])


def test_what_a_helper_keeps_is_the_grader_s_run_bit_for_bit(fresh, monkeypatch):
    """A helper run to its end, alone: every run of its share is in the cache, and reads back
    (nothing trained here) as the run the grader trains itself. In the test above the grader
    may have trained every run before a helper kept one."""
    share = [("bn-train-mode", 1), ("init-scale", 0)]
    proc = prefetch._start(SEED, share, prefetch._writable(practice_cache.folder()))
    assert proc is not None and proc.wait(timeout=300) == 0
    want = alone(share)
    monkeypatch.setattr(runs, "trained", lambda *a: pytest.fail("trained here, not read from the cache"))
    for pair in share:
        assert runs.is_kept(SEED, *pair)
        assert same_trace(runs.trace(SEED, *pair, practice=True), want[pair])


def test_no_helper_without_the_cache_or_a_spare_core(fresh, monkeypatch):
    monkeypatch.setattr(prefetch, "cores", lambda: 1)
    prefetch.train_all(SEED, PAIRS[:4])
    monkeypatch.setenv(practice_cache.ENV, "off")
    monkeypatch.setattr(prefetch, "cores", lambda: 8)
    prefetch.train_all(SEED + 1, PAIRS[:4])
    assert fresh == []


def test_only_practice_prefetches(monkeypatch):
    asked = []
    monkeypatch.setattr(prefetch, "train_all", lambda seed, pairs: asked.append(seed))
    monkeypatch.setattr(runs, "trace_for", lambda ctx, cause, index: {})
    for practice in (False, True):
        ctx = SimpleNamespace(seed=7, sandbox=SimpleNamespace(practice=practice), call=lambda *a: "healthy")
        question.expect_diagnoses(ctx, [("healthy", 0)], "runs")
    assert asked == [7]


def test_a_relative_cache_folder_is_the_same_folder_for_a_helper(fresh, monkeypatch, tmp_path):
    """A helper works in /: it is handed the folder this process means, made absolute."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(practice_cache.ENV, "relative-cache")
    monkeypatch.setattr(prefetch, "cores", lambda: 2)
    envs = []
    real = subprocess.Popen

    def spy(argv, **kw):
        envs.append(kw["env"])
        return real(argv, **kw)
    monkeypatch.setattr(prefetch.subprocess, "Popen", spy)
    prefetch.train_all(SEED, PAIRS)
    assert [env[practice_cache.ENV] for env in envs] == [str(tmp_path / "relative-cache")]
    assert all(runs.is_kept(SEED, *pair) for pair in PAIRS)


def test_no_helper_where_the_cache_cannot_be_written(fresh, monkeypatch):
    """Its runs would be lost (and trained again here): the grader trains them all itself."""
    monkeypatch.setenv(practice_cache.ENV, "/proc/no-such-folder/cache")
    monkeypatch.setattr(prefetch, "cores", lambda: 4)
    prefetch.train_all(SEED, PAIRS[:4])
    assert fresh == []
    want = alone(PAIRS[:4])
    for pair in PAIRS[:4]:
        assert same_trace(runs.trace(SEED, *pair, practice=True), want[pair])
