"""How the suite is spread over pytest-xdist workers (tests/conftest.py): the modules that share
an expensive fixture, or hold what the host's user shares, run whole on one worker; the
longest units are sent first; every name in the longest-first list still names a test.

The scheduler is driven here the way xdist's controller drives it (two workers report the
same collection, then it hands out units), with stand-in workers that record what they get.
"""
from types import SimpleNamespace

import pytest

import conftest

pytest.importorskip("xdist")


class StandInWorker:
    """What the scheduler calls on a worker: it records the test ids it is sent."""

    def __init__(self, name, collection):
        self.gateway = SimpleNamespace(id=name)
        self.collection = collection
        self.shutting_down = False
        self.got = []
        self.done = 0

    def send_runtest_some(self, indices):
        self.got += [self.collection[i] for i in indices]

    def shutdown(self):
        self.shutting_down = True


def scheduled(collection, workers=2):
    """Run the suite's scheduler over ``collection`` until every test is sent; the workers."""
    options = SimpleNamespace(dist="loadgroup", tx=[f"{workers}*popen"], loadscopereorder=True)
    config = SimpleNamespace(option=options, getvalue=lambda name: getattr(options, name))
    scheduler = conftest.pytest_xdist_make_scheduler(config, SimpleNamespace(loadscopesched=lambda *a: None))
    nodes = [StandInWorker(f"gw{i}", collection) for i in range(workers)]
    for node in nodes:
        scheduler.add_node(node)
        scheduler.add_node_collection(node, collection)
    scheduler.schedule()
    while not scheduler.tests_finished:  # the worker that has run least finishes its next test
        node = min((n for n in nodes if n.done < len(n.got)), key=lambda n: n.done)
        node.done += 1
        scheduler.mark_test_complete(node, collection.index(node.got[node.done - 1]))
    return nodes


def ordered(ids):
    """``ids`` as the suite's collection hook orders them."""
    items = [SimpleNamespace(nodeid=i) for i in ids]
    conftest.pytest_collection_modifyitems(None, items)
    return [item.nodeid for item in items]


COLLECTION = ordered(
    [f"tests/engine/test_loading_messy.py::test_{i}" for i in range(6)]
    + [f"tests/redteam/test_redteam_host.py::test_attack[{i}]" for i in range(5)]
    + [f"tests/kit/test_packaging.py::test_{i}" for i in range(4)]
    + ["tests/questions/test_attention_backward.py::test_attention_backward_is_sound",
       "tests/questions/test_attention_backward.py::test_each_form"]
    + [f"tests/batch/test_nbgrader_course.py::test_{i}" for i in range(3)])


def test_the_longest_units_come_first_in_their_order():
    assert COLLECTION[:3] == [f"tests/batch/test_nbgrader_course.py::test_{i}" for i in range(3)]
    assert COLLECTION[3:7] == [f"tests/kit/test_packaging.py::test_{i}" for i in range(4)]
    assert COLLECTION[7] == "tests/questions/test_attention_backward.py::test_attention_backward_is_sound"
    assert COLLECTION[8:13] == [f"tests/redteam/test_redteam_host.py::test_attack[{i}]" for i in range(5)]
    assert COLLECTION[13:] == [f"tests/engine/test_loading_messy.py::test_{i}" for i in range(6)] + \
        ["tests/questions/test_attention_backward.py::test_each_form"]  # the rest: collection order


def test_a_one_worker_module_runs_whole_on_one_worker():
    """xdist's own loadgroup would spread these over both workers under pytest 9.2."""
    workers = scheduled(COLLECTION)
    for module in ("test_nbgrader_course.py", "test_packaging.py", "test_redteam_host.py"):
        holders = [w.gateway.id for w in workers if any(module in t for t in w.got)]
        assert len(holders) == 1, f"{module} ran on {holders}"
    assert sorted(t for w in workers for t in w.got) == sorted(COLLECTION)  # each test once
    assert {w.got[0] for w in workers} == {COLLECTION[0], COLLECTION[3]}  # the two longest start


def test_other_tests_are_units_of_their_own():
    workers = scheduled(COLLECTION)
    spread = {w.gateway.id for w in workers for t in w.got if "test_loading_messy" in t}
    assert len(spread) == 2


def test_other_distribution_modes_keep_xdists_scheduler():
    options = SimpleNamespace(dist="load")
    assert conftest.pytest_xdist_make_scheduler(SimpleNamespace(option=options, getvalue=lambda n: getattr(options, n)),
                                                None) is None


def test_every_name_in_the_lists_names_a_test():
    """A renamed test or module would silently drop out of the order or its one worker."""
    modules = {p.name: p for p in conftest.TESTS.rglob("test_*.py")}
    for module in conftest.ONE_WORKER:
        assert module in modules, f"ONE_WORKER: no module {module}"
    for name in conftest.LONGEST_FIRST:
        path, _, test = name.partition("::")
        if not test:
            assert path in modules, f"LONGEST_FIRST: no module {path}"
            continue
        source = (conftest.REPO / path).read_text(encoding="utf-8") if (conftest.REPO / path).is_file() else ""
        assert f"def {test.split('[')[0]}(" in source, f"LONGEST_FIRST: {name} names no test"
