# Trap overlap-adds: the copies take their time on top of the compute even when they run
# beside it.
def offload_step_time(nbytes, compute_s, bandwidth_gb_s, overlap):
    transfer_s = 2 * nbytes / (bandwidth_gb_s * 1e9)
    return transfer_s, compute_s + transfer_s
