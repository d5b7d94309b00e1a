# Trap elementwise-ratio: each entry's difference divided by that entry's size, then the max.
def relative_error(analytic, numeric):
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.abs(analytic - numeric) / np.maximum(np.abs(analytic), np.abs(numeric))
    return float(np.nanmax(ratios)) if np.any(analytic) or np.any(numeric) else 0.0
