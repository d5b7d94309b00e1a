# Trap one-way: the copy to the host is counted, the copy back is not.
def offload_step_time(nbytes, compute_s, bandwidth_gb_s, overlap):
    transfer_s = nbytes / (bandwidth_gb_s * 1e9)
    return transfer_s, max(compute_s, transfer_s) if overlap else compute_s + transfer_s
