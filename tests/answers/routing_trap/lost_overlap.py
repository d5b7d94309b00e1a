# Trap lost-overlap: fancy-index `+=` with repeated indices keeps one contribution only.
def maxpool2d_backward(dout, argmax, input_shape, kernel_size, stride):
    n, c, h, w = input_shape
    dx = np.zeros((n, c, h * w))
    for i in range(n):
        for j in range(c):
            dx[i, j][argmax[i, j].ravel()] += dout[i, j].ravel()
    return dx.reshape(input_shape)
