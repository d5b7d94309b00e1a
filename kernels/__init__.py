"""The Numba CUDA reference kernels, one module per question (installed as
``backprop_traps.kernels``). Nothing is imported here: each module loads numba itself."""
