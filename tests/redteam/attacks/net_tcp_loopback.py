# question: forward_vs_reverse
# base: solution
# Class 8: a TCP connection to the test's listener on 127.0.0.1 sending the token, and a
# listening socket of its own (bind).
import socket

TOKEN = "__TOKEN__"
PORT = int("__PORT__")


def _attack():
    try:
        with socket.create_connection(("127.0.0.1", PORT), timeout=1) as s:
            s.sendall(TOKEN.encode())
        print("NET tcp connected")
    except OSError as e:
        print("NET tcp refused", e.errno)
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            s.listen()
        print("NET tcp bind ALLOWED")
    except OSError as e:
        print("NET tcp bind refused", e.errno)


_solution_forward = chain_forward


def chain_forward(As, x):
    _attack()
    return _solution_forward(As, x)
