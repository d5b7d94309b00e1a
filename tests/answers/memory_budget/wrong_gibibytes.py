# expect: unnamed
# The bandwidth read in GiB/s (2^30 bytes), where the contract's GB are 1e9 bytes: every time
# is 7 % short, which no trap explains.
def offload_step_time(nbytes, compute_s, bandwidth_gb_s, overlap):
    transfer_s = 2 * nbytes / (bandwidth_gb_s * 2 ** 30)
    return transfer_s, max(compute_s, transfer_s) if overlap else compute_s + transfer_s
