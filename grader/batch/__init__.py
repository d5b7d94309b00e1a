"""Grading a whole class: ``grade batch SOURCE -o OUTDIR`` (or ``python -m backprop_traps.grader.batch``).

The pieces, one module each:
- ``layouts``     finds the submissions in SOURCE and tells whose they are and which question;
- ``variants``    gives every student their own seed (HMAC of a course secret);
- ``store``       OUTDIR: one result per submission, written atomically, read back to resume;
- ``plan``        what is left to grade, and how a result is recorded (both runners use it);
- ``grading``     grades one submission description, never raises (a worker or a Dask task);
- ``worker``      the grading process the local runner drives (one per ``-j`` slot);
- ``runner``      the local runner: ``-j`` grading processes, a watchdog, resume;
- ``dask_runner`` the same batch as one Dask task per submission;
- ``gradebook``   the gradebook CSV, the text summary and the chart;
- ``needs_a_look`` the submissions whose score says little (timeouts, memory, syntax, ...);
- ``export``      the class's grades for an LMS (``grade export``: csv, Canvas, Moodle);
- ``nbgrader_course`` and ``nbgrader_kernel``: an nbgrader course whose kernel is sandboxed
  and whose scores come from `grade`, set up with ``configure(c)`` in nbgrader_config.py.
"""
