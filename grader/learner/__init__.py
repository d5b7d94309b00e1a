"""What the learner sees and keeps: the terminal report, their progress history, and the
interview rehearsal with its key points."""
