# question: forward_vs_reverse
# base: solution
# Not an attack: the solution as submitted by an honest classmate (full marks expected).
