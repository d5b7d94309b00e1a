def maxpool2d_forward(x, kernel_size, stride):
    hog = np.ones(8 * 1024**3 // 8)
    return hog, hog
