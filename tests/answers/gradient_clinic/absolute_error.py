# Trap absolute-error: the norm of the difference, not divided by the gradients' size.
def relative_error(analytic, numeric):
    return float(np.linalg.norm(analytic - numeric))
