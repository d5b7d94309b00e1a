# question: forward_vs_reverse
# base: solution
# Class 6 (state outside every limit): a System V shared memory segment with a fixed key,
# created and left behind (not removed), holding a note for the next submission; that
# submission (the same file graded again) looks for it and prints what it finds.
import ctypes

TOKEN = "__TOKEN__"
KEY = int(TOKEN[-7:], 16) | 0x10000000
_libc = ctypes.CDLL(None, use_errno=True)
_libc.shmat.restype = ctypes.c_void_p
_libc.shmat.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_int]


def _note():
    shmid = _libc.shmget(KEY, ctypes.c_size_t(4096), 0)
    if shmid >= 0:
        addr = _libc.shmat(shmid, None, 0)
        if addr not in (None, ctypes.c_void_p(-1).value):
            print("FOUND", ctypes.string_at(addr, 64).split(b"\0")[0])
        return
    shmid = _libc.shmget(KEY, ctypes.c_size_t(4096), 0o1000 | 0o666)
    if shmid < 0:
        print("shmget refused", ctypes.get_errno())
        return
    addr = _libc.shmat(shmid, None, 0)
    if addr not in (None, ctypes.c_void_p(-1).value):
        note = (TOKEN + "-note").encode()
        ctypes.memmove(addr, note, len(note))
        print("left a note in shm", shmid)


_note()  # at load time: look for a note left by an earlier submission, else leave one
