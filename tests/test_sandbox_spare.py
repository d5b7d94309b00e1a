"""Children launched one measured call ahead (``Sandbox.expect_measured_calls``): each
measured call still runs in a fresh child of its own, its peak is the same, and a spare that
is never used ends with the sandbox, its processes, cgroup and folder gone."""
import os

from backprop_traps.grader.sandbox.cleanup import _alive
from backprop_traps.grader.sandbox.process import Sandbox
from test_sandbox_layers import FAST, GROW, mode  # noqa: F401 (the fixture: every isolation level)

TOKENED = GROW + ("import os\nTOKEN = float(int.from_bytes(os.urandom(6), 'big'))\n"
                  "print('loaded')\n"
                  "def token(mb):\n    return TOKEN\n")


def test_each_measured_call_runs_in_a_fresh_child_launched_ahead(mode):
    with Sandbox(TOKENED, FAST) as box:
        box.expect_measured_calls(2)
        assert box._spare is not None  # launched while the first child boots
        first = box.call("token", 1)
        big = box.call("grow", 64, measure_memory=True)
        assert box._spare is not None  # the second measured call's child, booting now
        small = box.call("nothing", 64, measure_memory=True)
        assert box._spare is None  # two expected, two made: no third child
        after = box.call("token", 1)  # an unmeasured call goes on in the last child
        output = box.output
    assert first.ok and big.ok and small.ok and after.ok, (first.error, big.error, small.error, after.error)
    assert after.value != first.value  # the measured calls restarted the child: new load, new token
    assert output.count("loaded") == 3, output  # three children loaded; the spares' prints are kept
    if "no cgroup" in mode:
        assert big.memory["peak"] is None and small.memory["peak"] is None
        return
    assert 60 * 2 ** 20 < big.memory["peak"] < 80 * 2 ** 20, (mode, big.memory)
    assert small.memory["peak"] < 8 * 2 ** 20, (mode, small.memory)


def test_a_spare_never_used_ends_with_the_sandbox(mode):
    box = Sandbox(TOKENED, FAST)
    box.expect_measured_calls(3)
    assert box.call("grow", 8, measure_memory=True).ok
    spare = box._spare
    assert spare is not None and spare._proc is not None
    pid, folder = spare._proc.pid, spare._tmp
    groups = list(spare._meter.group._folders()) if getattr(spare._meter, "group", None) else []
    box.close()
    assert box._spare is None and not _alive(pid)
    assert not os.path.exists(folder)
    assert not any(g.exists() for g in groups), groups


def test_a_wrong_hint_costs_nothing_but_time(mode):
    with Sandbox(TOKENED, FAST) as box:
        box.expect_measured_calls(1)
        a = box.call("grow", 8, measure_memory=True)
        b = box.call("grow", 8, measure_memory=True)  # not announced: started the usual way
    assert a.ok and b.ok, (a.error, b.error)
