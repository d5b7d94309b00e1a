"""The two-layer MLP on a GPU in Numba CUDA, built from the VRAM-trap question's kernels.

No new kernels: this module launches kernels/vram_trap.py's, in the order the derivation
of solutions/05_mlp_backprop.ipynb goes, and keeps every intermediate array on the device.

  forward   1. linear_relu_forward_kernel: h = relu(x @ W1 + b1) and a BIT-PACKED mask of
               z > 0 (np.packbits order), never the float z: the backward needs its sign only.
            2. linear_forward_kernel: out = h @ W2 + b2.
  loss      3. mse_loss_backward_kernel: dout = (out - y) / N and each row's squared error.
  backward  4. linear_params_partials_kernel + linear_params_sum_kernel: dW2 = h.T @ dout,
               db2 = sum_n dout, a two-stage reduction over the batch: the weight gradient is
               a batch sum of outer products (saved input x upstream gradient), the bias
               gradient the same sum without the input.
            5. linear_backward_input_kernel: dh = dout @ W2.T, one thread per element of dh.
            6. + 7. the same two kernels for the first layer, with x as its input and dh as
               its upstream gradient, gated by the mask bit as it is read (relu=True): dz is
               never stored.

Shape letters: N batch rows, D_in input features, H hidden units, D_out outputs; x (N, D_in),
W1 (D_in, H), b1 (H,), W2 (H, D_out), b2 (D_out,), h (N, H), out and y (N, D_out); the mask
is uint8 (ceil(N * H / 8),).

Run: the host functions at the bottom take and return numpy arrays. With no GPU set
NUMBA_ENABLE_CUDASIM=1 before numba is imported (tests/conftest.py does) to run them in
Numba's CUDA simulator:
    python -m pytest tests/kernels/test_mlp_backprop_kernels.py
On a GPU they compile for the device (BACKPROP_TRAPS_REAL_GPU=1 for the tests). Generic over
the float dtype: the zero and 1 / N the kernels need come in the arrays' dtype.

Check and time it: python -m backprop_traps.kernels.mlp_backprop runs these kernels on the
benchmark's tiny cases (vram_trap's: kernels/cases/vram_trap.py) in float64 and float32 against the solution notebook, the CPU
reference, and times them (kernels/runtime/self_check.py; the simulator without a GPU).
"""

if __name__ == "__main__":  # python -m backprop_traps.kernels.mlp_backprop: no GPU? the simulator, before numba loads
    from backprop_traps.kernels.runtime.self_check import choose_simulator_without_a_gpu
    choose_simulator_without_a_gpu()

import math

import numpy as np

from backprop_traps.kernels.runtime.device import cuda
from backprop_traps.kernels.vram_trap import (backward_input, backward_params, linear_forward_device,
                                              linear_relu_forward_device, mse_loss_backward_device)


def _zero(d_array):
    return d_array.dtype.type(0)


def _to_device(array):
    return cuda.to_device(np.ascontiguousarray(array))


# ---------------------------------------------------------------- device arrays in, out
# Every launch goes through kernels/vram_trap.py's launchers: their grids are the ones the
# benchmark's cases and the launch-limit test (kernels/runtime/dry_run.py) check.

def _forward_dev(d_x, d_W1, d_b1, d_W2, d_b2):
    """Kernels 1, 2: (out, h, mask) on the device."""
    N, H, D_out = d_x.shape[0], d_W1.shape[1], d_W2.shape[1]
    d_h = cuda.device_array((N, H), dtype=d_x.dtype)
    d_mask = cuda.device_array(math.ceil(N * H / 8), dtype=np.uint8)
    linear_relu_forward_device(d_x, d_W1, d_b1, d_h, d_mask)
    d_out = cuda.device_array((N, D_out), dtype=d_x.dtype)
    linear_forward_device(d_h, d_W2, d_b2, d_out)
    return d_out, d_h, d_mask


def _mse_loss_dev(d_out, d_y):
    """Kernel 3: (loss as a float, dout on the device)."""
    N = d_out.shape[0]
    d_dout = cuda.device_array(d_out.shape, dtype=d_out.dtype)
    d_row_sq = cuda.device_array(N, dtype=d_out.dtype)
    mse_loss_backward_device(d_out, d_y, d_dout, d_row_sq)
    return 0.5 * float(d_row_sq.copy_to_host().sum()) / N, d_dout


def _layer_backward_dev(d_up, d_mask, d_input, d_W):
    """Kernels 4, 5 (or 6, 7): (d_input, dW, db) of input @ W + b; with a mask, the upstream
    gradient is gated by the ReLU's bit as it is read."""
    relu = d_mask is not None
    if not relu:
        d_mask = cuda.device_array(1, dtype=np.uint8)  # never read: relu is False
    zero = _zero(d_up)
    d_dW = cuda.device_array(d_W.shape, dtype=d_W.dtype)
    d_db = cuda.device_array(d_W.shape[1], dtype=d_W.dtype)
    backward_params(d_up, d_mask, relu, d_input, d_dW, d_db, zero)
    d_dinput = cuda.device_array(d_input.shape, dtype=d_input.dtype)
    backward_input(d_up, d_mask, relu, d_W, d_dinput, zero)
    return d_dinput, d_dW, d_db


def _backward_dev(d_dout, d_x, d_mask, d_h, d_W1, d_W2):
    """The second layer (no ReLU after it), then the first through the mask."""
    d_dh, d_dW2, d_db2 = _layer_backward_dev(d_dout, None, d_h, d_W2)
    d_dx, d_dW1, d_db1 = _layer_backward_dev(d_dh, d_mask, d_x, d_W1)
    return d_dx, d_dW1, d_db1, d_dW2, d_db2


def _host(*d_arrays):
    return tuple(d.copy_to_host() for d in d_arrays)


# ---------------------------------------------------------------- host functions: numpy in, out

def mlp_forward(x, W1, b1, W2, b2):
    """(out, h, mask): out (N, D_out), h = relu(x @ W1 + b1) (N, H), and instead of the
    solution's float z the packed mask np.packbits((z > 0).ravel()): ceil(N * H / 8) bytes,
    all that mlp_backward needs of z."""
    return _host(*_forward_dev(*(_to_device(a) for a in (x, W1, b1, W2, b2))))


def mse_loss(out, y):
    """(loss, dout): loss = 0.5 * sum((out - y) ** 2) / N as a float, dout = (out - y) / N."""
    loss, d_dout = _mse_loss_dev(_to_device(out), _to_device(y))
    return loss, d_dout.copy_to_host()


def mlp_backward(dout, x, mask, h, W1, W2):
    """(dx, dW1, db1, dW2, db2) as the solution's mlp_backward, with the packed mask from
    mlp_forward in the place of z."""
    return _host(*_backward_dev(*(_to_device(a) for a in (dout, x, mask, h, W1, W2))))


def mlp_loss_and_grads(x, y, W1, b1, W2, b2):
    """One training step's numbers, forward, loss and backward on the device with no copy back
    in between: (loss, (dx, dW1, db1, dW2, db2))."""
    d_x, d_W1, d_W2 = _to_device(x), _to_device(W1), _to_device(W2)
    d_out, d_h, d_mask = _forward_dev(d_x, d_W1, _to_device(b1), d_W2, _to_device(b2))
    loss, d_dout = _mse_loss_dev(d_out, _to_device(y))
    return loss, _host(*_backward_dev(d_dout, d_x, d_mask, d_h, d_W1, d_W2))


if __name__ == "__main__":  # check against the solution notebook and time: kernels/runtime/self_check.py
    import sys
    from backprop_traps.kernels.runtime.self_check import main
    sys.exit(main("mlp_backprop"))
