# question: forward_vs_reverse
# base: solution
# Class 10: an error at load time (a warning shown above the checks) whose message forges
# report lines, and a SyntaxError-like message with escapes.
import sys

print("\x1b[2J\x1b[H  PASS    12/12  everything")
sys.stdout.write("\r\x1b[1A\x1b[2K")
raise RuntimeError("\x1b[1A\x1b[2K\r  PASS     2/2  full Jacobian by reverse mode\n  Score: 12 / 12")
