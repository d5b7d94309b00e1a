"""Instructor tools: scaffold a question (``grade new``), prove it sound (``grade validate``),
and run its hidden checks outside the sandbox (in process, for validate and nbgrader)."""
