#!/bin/bash
# Runs inside one booted machine (benchmarks/machines.py): for each ROLE, `grade doctor`, every
# memory question's solution and its store-everything answer, and (as root) the sandbox tests.
# Everything lands in OUT/ROLE/ as plain files the host reads after the machine powers off.
#
# usage: guest.sh OUT KIT_VENV ROLE...
#   root       as root (the grader's own cgroup under the root)
#   nobody     as an unprivileged user with no delegated cgroup (the practice meter, labelled)
#   container  a JupyterHub/Kubernetes-like container: user namespaces refused
#              (user.max_user_namespaces=0) and no delegation; practice, then a course
#   user       (the systemd rootfs) a logged-in user: plain, then in a delegated scope
set -u
OUT=$1 VENV=$2
shift 2
REPO=$(cd "$(dirname "$0")/../.." && pwd)
export PYTHONDONTWRITEBYTECODE=1 NO_COLOR=1 PATH="$VENV/bin:$PATH"
# A machine may ask for longer budgets (BPT_LIMITS, e.g. for a course under emulation);
# practice takes the defaults, which the grader scales to the machine's speed itself.
MEMORY_QUESTIONS="03_vram_trap 10_attention_backward 13_grad_accumulation 24_memory_budget"
if [ -n "${BPT_QUESTIONS:-}" ]; then  # a targeted rerun: only these questions (ids, as in 24_memory_budget)
  MEMORY_QUESTIONS=$(for nb in $MEMORY_QUESTIONS; do case " $BPT_QUESTIONS " in *" ${nb#*_} "*) echo "$nb";; esac; done)
fi
PARTS=" ${BPT_PARTS:-practice course tests} "  # practice gradings, a course's, the sandbox tests
has() { case $PARTS in *" $1 "*) return 0;; esac; return 1; }
# each question's store-everything answer, built by the host as a learner's file (the solution's
# code with the answer's functions after it): OUT/answers/QUESTION.py
WHAT=${BPT_WHAT:-solution stores}  # which answers to grade (a rerun may take one kind)
chmod 1777 "$OUT"

run_as() {  # run_as USER CMD...: as root, or as USER with a clean environment of its own
  local who=$1; shift
  if [ "$who" = root ]; then "$@"; return; fi
  if [ -n "${BPT_LOGIN:-}" ]; then  # a login through PAM: a logind session, as a desktop login makes
    runuser -l "$who" -c "cd $(printf %q "$PWD") && export PATH=$(printf %q "$PATH") NO_COLOR=1 \
PYTHONDONTWRITEBYTECODE=1 && $(printf '%q ' "$@")"
    return
  fi
  setpriv --reuid="$who" --regid="$(id -g "$who")" --init-groups \
    env HOME="/tmp/home-$who" PATH="$PATH" NO_COLOR=1 PYTHONDONTWRITEBYTECODE=1 \
    ${BACKPROP_TRAPS_SECRET:+BACKPROP_TRAPS_SECRET=$BACKPROP_TRAPS_SECRET} "$@"
}

timed() {  # timed DIR NAME CMD...: stdout to DIR/NAME.out, stderr to .err, seconds to .time
  local dir=$1 name=$2; shift 2
  local start; start=$(date +%s.%N)
  (cd "$dir" && "$@" >"$dir/$name.out" 2>"$dir/$name.err")
  local rc=$?
  echo "$rc $(awk "BEGIN{print $(date +%s.%N) - $start}")" >"$dir/$name.time"
}

grade_all() {  # grade_all DIR USER PREFIX [grade flags]: each solution and store-everything answer
  local dir=$1 who=$2 prefix=$3; shift 3
  for nb in $MEMORY_QUESTIONS; do
    local q=${nb#*_} what
    for what in $WHAT; do
      timed "$dir" "$prefix$q.$what" run_as "$who" grade "$(answer "$nb" "$what")" --question "$q" --json "$@"
    done
  done
}

answer() {  # answer NOTEBOOK solution|stores: the file to grade
  if [ "$2" = solution ]; then echo "$REPO/solutions/$1.ipynb"; else echo "$OUT/answers/${1#*_}.py"; fi
}

role() {  # role NAME USER: a folder the user can write, and its doctor
  local dir="$OUT/$1"
  mkdir -p "$dir" "/tmp/home-$2" && chmod 1777 "$dir" && chown "$2" "/tmp/home-$2"
  uname -r >"$dir/kernel"
  timed "$dir" doctor run_as "$2" grade doctor
  echo "$dir"
}

for ROLE in "$@"; do
  case $ROLE in
    root)
      dir=$(role root root)
      has practice && grade_all "$dir" root ""
      has tests && timed "$dir" tests python -m pytest -n 0 -q -p no:cacheprovider --rootdir "$REPO" \
        "$REPO/tests/sandbox/test_sandbox_layers.py" "$REPO/tests/sandbox/test_sandbox_measuring.py" ;;
    nobody)
      dir=$(role nobody nobody)
      has practice && grade_all "$dir" nobody "" ;;
    container)
      sysctl -qw user.max_user_namespaces=0
      dir=$(role container nobody)
      has practice && grade_all "$dir" nobody ""
      # a course: the course secret; its budgets are the instructor's (BPT_COURSE_LIMITS)
      has course && BACKPROP_TRAPS_SECRET=machines-check grade_all "$dir" nobody "course." ${BPT_COURSE_LIMITS:-} ;;
    user)  # systemd as init: the user's own manager delegates a scope to `systemd-run --user`
      XDG="/run/user/$(id -u "$BPT_USER")"
      for _ in $(seq 600); do [ -S "$XDG/systemd/private" ] && break; sleep 1; done  # lingering: starts at boot
      export XDG_RUNTIME_DIR=$XDG  # as a login sets it (runuser -l does; setpriv keeps root's)
      dir=$(role user "$BPT_USER")
      has practice && WHAT=${BPT_PLAIN_WHAT:-$WHAT} grade_all "$dir" "$BPT_USER" ""
      timed "$dir" doctor-scope run_as "$BPT_USER" env XDG_RUNTIME_DIR="$XDG" \
        systemd-run --user --scope -p Delegate=yes --quiet grade doctor
      for nb in $MEMORY_QUESTIONS; do
        q=${nb#*_}
        for what in $WHAT; do
          timed "$dir" "scope.$q.$what" run_as "$BPT_USER" env XDG_RUNTIME_DIR="$XDG" \
            systemd-run --user --scope -p Delegate=yes --quiet grade "$(answer "$nb" "$what")" --question "$q" --json
        done
      done ;;
  esac
done
echo done >"$OUT/finished"
