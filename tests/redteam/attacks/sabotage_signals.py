# question: forward_vs_reverse
# base: solution
# Class 5: signal the grader: SIGUSR2 (the test counts it) to the parent and its process
# group, through kill, killpg and pidfd_send_signal.
import os
import signal


def _sabotage():
    ppid = os.getppid()
    for how, fn in (("kill", lambda: os.kill(ppid, signal.SIGUSR2)),
                    ("killpg", lambda: os.killpg(os.getpgid(ppid), signal.SIGUSR2)),
                    ("pidfd", lambda: signal.pidfd_send_signal(os.pidfd_open(ppid), signal.SIGUSR2))):
        try:
            fn()
            print("signalled", how, ppid)
        except (OSError, AttributeError) as e:
            print("refused", how, getattr(e, "errno", e))


_solution_forward = chain_forward


def chain_forward(As, x):
    _sabotage()
    return _solution_forward(As, x)
