# question: forward_vs_reverse
# base: solution
# Class 8 (local network): UDP datagrams with the token to the test's listener on
# 127.0.0.1 (and to every port near it, and to the host's other addresses).
import socket

TOKEN = "__TOKEN__"
PORT = int("__PORT__")


def _attack():
    for host in ("127.0.0.1", "localhost", "::1"):
        try:
            fam = socket.AF_INET6 if ":" in host else socket.AF_INET
            with socket.socket(fam, socket.SOCK_DGRAM) as s:
                s.sendto(TOKEN.encode(), (host, PORT))
            print("NET udp sent", host)
        except OSError as e:
            print("NET udp refused", host, e.errno)


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
