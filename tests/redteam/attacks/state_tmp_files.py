# question: forward_vs_reverse
# base: solution
# Class 6: notes in every writable-looking place (/tmp, /var/tmp, the home folder, the
# working folder and its parent, /dev/shm), read back by the next submission.
import os
import tempfile

TOKEN = "__TOKEN__"
NAME = "rt-note-" + TOKEN[-8:]
PLACES = ["/tmp", "/var/tmp", os.path.expanduser("~"), os.getcwd(), os.path.dirname(os.getcwd()),
          tempfile.gettempdir(), "/dev/shm", "/run/user/0", "/run/lock"]


def _note():
    for folder in PLACES:
        try:
            with open(os.path.join(folder, NAME)) as f:
                print("FOUND", folder, f.read())
                return
        except OSError:
            pass
    for folder in PLACES:
        try:
            with open(os.path.join(folder, NAME), "w") as f:
                f.write(TOKEN + "-note")
            print("left a note in", folder)
        except OSError as e:
            print("refused", folder, e.errno)


_note()  # at load time: look for a note left by an earlier submission, else leave one
