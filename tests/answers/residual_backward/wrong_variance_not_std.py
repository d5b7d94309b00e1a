# expect: unnamed
# not named: fan-swapped xavier-with-relu
# The variance 2 / fan returned where the standard deviation is asked.
def kaiming_std(shape, mode, negative_slope):
    fan_in, fan_out = shape
    fan = fan_in if mode == "fan_in" else fan_out
    return 2.0 / ((1.0 + negative_slope ** 2) * fan)
