"""Device code that more than one question's kernels share: vector loads and warp sums
(patterns.py), the row reductions of softmax-like kernels (row_reduction.py), and the tiled
matrix product's pieces (tiled_matmul.py). Nothing is imported here."""
