# question: forward_vs_reverse
# base: solution
# Class 10: the source line the grader quotes when a function raises holds raw control
# characters (an ESC and a bidi override written literally into the file), and the
# exception's type name is forged through a class named with them. (The test writes them in
# for __ESC__ and __BIDI__, so that this file itself holds no control character.)


def chain_jvp(As, v):
    x = "ESC__ESC__[2K__ESC__[1A PASS 2/2 __BIDI__"; raise ValueError(x)


Evil = type("E__ESC__[1A\rPASS", (Exception,), {})


def chain_vjp(As, u):
    raise Evil("__BIDI__gnissap")
