"""The Dask runner: the same batch, one task per submission, on a Dask cluster.

``grade batch SOURCE -o OUTDIR --scheduler tcp://host:8786``. Each task calls
``grade_job`` (so ``grade_path``, with the same sandbox) on a worker; the submission's
bytes travel with the task, so workers need the kit installed but no shared filesystem.
The client writes each result into OUTDIR as it arrives, through the same ``Batch.record``
as the local runner: the files, the resume and the gradebook are the same.

Only a window of tasks is in flight at a time (four per worker thread, at least 64), so
a 30,000-submission course never holds every notebook in the scheduler's memory. A task
whose worker dies is retried by Dask on another worker (``distributed.scheduler.allowed-
failures``), then recorded as failed. Dask cannot stop a running task: the sandbox's own
limits are what bound a submission there. Workers run best with one thread each
(``dask worker --nthreads 1 --nworkers <cores>``): the grader's side holds the GIL.
"""
from __future__ import annotations

import secrets

from backprop_traps.grader.batch.grading import failed_record, grade_job
from backprop_traps.grader.batch.plan import Batch, Pending
from backprop_traps.grader.batch.store import result_name


def run_dask(batch: Batch, todo: list[Pending], address: str, on_result=lambda item: None,
             window: int | None = None) -> int:
    """Grade ``todo`` on the cluster at ``address``; returns how many were recorded."""
    from distributed import Client, as_completed

    if not todo:
        return 0
    client = Client(address, set_as_default=False)
    recorded = 0
    pending = list(reversed(todo))
    futures = {}
    try:
        threads = sum(client.nthreads().values()) or 1
        window = window or max(64, 4 * threads)
        token = secrets.token_hex(4)

        def submit():
            item = pending.pop()
            spec = batch.spec(item, with_content=True)
            future = client.submit(grade_job, spec, key=f"grade-{result_name(item.job)}-{token}",
                                   pure=False, retries=0)
            futures[future] = (item, spec)
            return future

        flow = as_completed([submit() for _ in range(min(window, len(pending)))], loop=client.loop)
        for future in flow:
            item, spec = futures.pop(future)
            try:
                record = future.result()
            except Exception as exc:  # noqa: BLE001 -- KilledWorker, lost connection, ...
                record = failed_record(spec, f"the Dask task failed ({type(exc).__name__}: {exc}); "
                                             "run the batch again to retry it")
            batch.record(item, record)
            recorded += 1
            on_result(item)
            if pending:
                flow.add(submit())
    finally:
        for future in futures:
            future.cancel()
        client.close()
    return recorded
