# question: forward_vs_reverse
# base: solution
# Class 6: a note in /dev/shm (and /run/shm, /dev/mqueue as a POSIX queue file) for the next
# submission, which lists those folders and prints any note it finds.
import os

TOKEN = "__TOKEN__"
NAME = "rt-note-" + TOKEN[-8:]


def _note():
    for folder in ("/dev/shm", "/run/shm", "/dev/mqueue"):
        path = os.path.join(folder, NAME)
        try:
            with open(path) as f:
                print("FOUND", f.read())
                return
        except OSError:
            pass
    for folder in ("/dev/shm", "/run/shm", "/dev/mqueue"):
        try:
            with open(os.path.join(folder, NAME), "w") as f:
                f.write(TOKEN + "-note")
            print("left a note in", folder)
        except OSError as e:
            print("refused", folder, e.errno)


_note()  # at load time: look for a note left by an earlier submission, else leave one
