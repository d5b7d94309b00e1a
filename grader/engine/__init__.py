"""Grading one submission: run every hidden check of its question against the
sandboxed learner code (``run.grade_path``), with seeded inputs, finite differences and
feedback; what a question and a result are."""
