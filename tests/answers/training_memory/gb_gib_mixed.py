# Trap gb-gib-mixed: every prefix taken as a power of 1024, so a "GB" is 2^30 bytes (the GiB).
def convert_bytes(n_bytes, unit):
    powers = {"B": 0, "KB": 1, "MB": 2, "GB": 3, "TB": 4, "KiB": 1, "MiB": 2, "GiB": 3, "TiB": 4}
    return n_bytes / 1024 ** powers[unit]
