# question: forward_vs_reverse
# base: solution
# Round 2, a class not named (the host's disk): without bubblewrap the working folder was a
# folder on the host's disk; files of the largest allowed size, one after another, would fill
# it (each file is capped, their number was not). Writes until refused, or 1.5 GB.
import os

_wrote = 0
for _i in range(96):
    try:
        with open(f"fill-{_i}.bin", "wb") as _f:
            for _ in range(16):
                _f.write(b"\1" * (1 << 20))
                _wrote += 1 << 20
    except OSError:
        break
print("WROTE", _wrote >> 20, "MB", flush=True)
