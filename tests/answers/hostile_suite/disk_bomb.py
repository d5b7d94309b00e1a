# hostile: fills its temp folder (3 x 15 MB), tries a file over the size limit and files
# outside the sandbox, then deletes its own working folder
# base: solution
# expect: full
import os
import shutil

_chunk = b"x" * (15 * 1024 * 1024)
for i in range(3):
    with open(f"fill{i}.bin", "wb") as f:
        f.write(_chunk)
try:
    with open("too_big.bin", "wb") as f:
        f.write(_chunk + _chunk[: 2 * 1024 * 1024])  # 17 MB
except OSError:
    pass
else:
    raise SystemExit("the file-size limit did not hold")
for target in ("/tmp/backprop-traps-pwned-disk", os.path.join(os.path.expanduser("~"), "..", "bomb.bin")):
    try:
        with open(target, "wb") as f:
            f.write(_chunk)
    except OSError:
        continue
    raise SystemExit(f"wrote outside the sandbox: {target}")
_here = os.getcwd()
os.chdir("/")
shutil.rmtree(_here, ignore_errors=True)
