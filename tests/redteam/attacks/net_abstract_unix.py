# question: forward_vs_reverse
# base: solution
# Class 8: connect to an abstract unix socket (no file: Landlock's path rules never see it)
# the test listens on, and send the token.
import socket

TOKEN = "__TOKEN__"
NAME = "__SOCKNAME__"


def _attack():
    for kind, name in ((socket.SOCK_STREAM, NAME), (socket.SOCK_DGRAM, NAME + "d")):
        try:
            with socket.socket(socket.AF_UNIX, kind) as s:
                s.settimeout(1)
                s.connect("\0" + name)
                s.send(TOKEN.encode())
            print("NET abstract connected", kind)
        except OSError as e:
            print("NET abstract refused", kind, e.errno)


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
