# Trap dead-per-entry: the share of entries at or below 0, not of units that never fire.
def dead_relu_fraction(pre_acts):
    return np.array([float(np.mean(z <= 0)) for z in pre_acts])
