# hostile: replaces isinstance, len and print for everyone in its process
# base: solution
# expect: at-most 0
# says: crashed the Python process
import builtins

builtins.isinstance = lambda obj, cls: True
builtins.len = lambda obj: 0
builtins.print = lambda *args, **kwargs: None
