# hostile: tries to lift its own resource limits (memory, CPU, file size, core files)
# base: solution
# expect: full
# needs: no-cap-sys-resource
import resource

for _res in (resource.RLIMIT_AS, resource.RLIMIT_CPU, resource.RLIMIT_FSIZE, resource.RLIMIT_CORE):
    try:
        resource.setrlimit(_res, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        continue
    raise SystemExit(f"lifted resource limit {_res}")
