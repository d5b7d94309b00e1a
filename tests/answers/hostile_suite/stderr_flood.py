# hostile: writes 50 MB of binary garbage and terminal escapes to stderr
# base: solution
# expect: full
import os

_garbage = b"\xff\xfe\x1b[2J\x1b[31mnot utf-8\x00\x07\r" * 4096
for _ in range(50 * 1024 * 1024 // len(_garbage)):
    os.write(2, _garbage)
