"""Reading what is graded: a learner's notebook or .py file, and the questions
(where they live, their solution notebooks, which are the reference)."""
