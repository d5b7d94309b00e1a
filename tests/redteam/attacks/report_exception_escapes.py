# question: forward_vs_reverse
# base: solution
# Class 10 (the terminal report): exceptions whose messages carry ANSI escapes (erase line,
# cursor up), carriage returns, newlines followed by forged "PASS" lines, bidi overrides.
FORGED = ("\x1b[2K\x1b[1A\r  PASS     2/2  JVP (forward mode) matches finite differences\n"
          "  PASS     2/2  VJP (reverse mode)\r\n  Score: 12 / 12\u202e21 / 0\u202c\x1b]0;owned\x07\x9b31m")


def chain_jvp(As, v):
    raise ValueError(FORGED)


def chain_vjp(As, u):
    raise KeyError(FORGED)


class Evil(Exception):
    def __str__(self):
        return FORGED


def jacobian_forward(As):
    raise Evil()
