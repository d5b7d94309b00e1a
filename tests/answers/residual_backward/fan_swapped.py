# Trap fan-swapped: PyTorch's nn.Linear keeps its weight as (out, in), and this answer reads
# the contract's (D_in, D_out) shape the same way.
def kaiming_std(shape, mode, negative_slope):
    fan_out, fan_in = shape
    fan = fan_in if mode == "fan_in" else fan_out
    return float(np.sqrt(2.0 / ((1.0 + negative_slope ** 2) * fan)))
