"""What the learner sees and keeps: the terminal report and their progress history."""
