# question: forward_vs_reverse
# base: solution
# Not an attack: an honest file with a 210,000-number literal table (4 MB). It got 0 ("crashed
# the Python process") when the source travelled in a frame the worker bounded like the
# child's answers. Full marks expected.
TABLE = [__TABLE__]
