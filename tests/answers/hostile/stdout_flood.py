import sys

for _ in range(200):
    sys.stdout.write("x" * 1_000_000)
