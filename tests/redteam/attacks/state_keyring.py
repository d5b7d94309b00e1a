# question: forward_vs_reverse
# base: solution
# Class 6: a note in the kernel keyrings (add_key into the user and session keyrings, by
# raw syscall), looked up by the next submission with request_key / keyctl(SEARCH, READ).
import ctypes

TOKEN = "__TOKEN__"
_libc = ctypes.CDLL(None, use_errno=True)
SYS_ADD_KEY, SYS_REQUEST_KEY, SYS_KEYCTL = 248, 249, 250
KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING = -4, -3
KEYCTL_READ = 11


def _note():
    desc = ("rt-" + TOKEN[-8:]).encode()
    for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING):
        key = _libc.syscall(SYS_REQUEST_KEY, b"user", desc, None, ctypes.c_long(ring))
        if key >= 0:
            buf = ctypes.create_string_buffer(128)
            n = _libc.syscall(SYS_KEYCTL, KEYCTL_READ, key, buf, 128)
            print("FOUND", buf.raw[:max(n, 0)])
            return
    note = (TOKEN + "-note").encode()
    for ring in (KEY_SPEC_USER_KEYRING, KEY_SPEC_SESSION_KEYRING):
        key = _libc.syscall(SYS_ADD_KEY, b"user", desc, note, ctypes.c_size_t(len(note)), ctypes.c_long(ring))
        print("add_key", ring, key, ctypes.get_errno())


_note()  # at load time: look for a note left by an earlier submission, else leave one
