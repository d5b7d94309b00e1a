# hostile: grabs memory 256 MB at a time until refused (reserved, not touched: the cap is
# on the address space, and touching gigabytes would only slow the test machine), then
# lets go and answers normally
# base: solution
# expect: full
_hog = []
try:
    while True:
        _hog.append(np.empty(256 * 1024 * 1024 // 8))
except MemoryError:
    pass
_grabbed = len(_hog) * 256
_hog.clear()
if _grabbed > 2048:
    raise SystemExit(f"grabbed {_grabbed} MB: the memory cap did not hold")
