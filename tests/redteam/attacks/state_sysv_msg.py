# question: forward_vs_reverse
# base: solution
# Class 6: a System V message queue with a fixed key, a message left in it for the next
# submission (the same file graded again, which reads and prints it).
import ctypes

TOKEN = "__TOKEN__"
KEY = int(TOKEN[-7:], 16) | 0x20000000
_libc = ctypes.CDLL(None, use_errno=True)


class _Msg(ctypes.Structure):
    _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 64)]


def _note():
    qid = _libc.msgget(KEY, 0)
    if qid >= 0:
        msg = _Msg()
        n = _libc.msgrcv(qid, ctypes.byref(msg), ctypes.c_size_t(64), 0, 0o4000)  # IPC_NOWAIT
        print("FOUND", msg.mtext.value if n >= 0 else b"(queue, no message)")
        return
    qid = _libc.msgget(KEY, 0o1000 | 0o666)
    if qid < 0:
        print("msgget refused", ctypes.get_errno())
        return
    msg = _Msg(1, (TOKEN + "-note").encode())
    print("left a message", _libc.msgsnd(qid, ctypes.byref(msg), ctypes.c_size_t(64), 0o4000))


_note()  # at load time: look for a note left by an earlier submission, else leave one
