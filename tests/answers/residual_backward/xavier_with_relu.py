# Trap xavier-with-relu: Glorot's normal initialisation, whatever the activation and the mode.
def kaiming_std(shape, mode, negative_slope):
    fan_in, fan_out = shape
    return float(np.sqrt(2.0 / (fan_in + fan_out)))
