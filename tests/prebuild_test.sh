#!/usr/bin/env bash
# tools/prebuild.sh against a stand-in Bazel that records what it was asked
# and a stand-in pip (a sleep): the head start is interrupted when pip
# finishes first, runs to its end when it finishes before pip, and does not
# start when pip is already done. No real build: the stand-in's build runs
# until it is interrupted or told to finish.
set -euo pipefail
prebuild=$(realpath "$1")
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT

cat >"$work/bazel" <<'FAKE'
#!/usr/bin/env bash
echo "$*" >>"$WORK/calls"
case "$1" in
  query) echo "//lib:a"; echo "//lib:b"; echo "Loading: 0 packages" ;;
  build)
    trap 'echo interrupted >>"$WORK/calls"; exit 8' INT
    while [ ! -e "$WORK/finish" ]; do sleep 0.05; done
    echo finished >>"$WORK/calls" ;;
esac
FAKE
chmod +x "$work/bazel"
export WORK=$work BAZEL=$work/bazel

fail() { echo "FAIL: $*"; cat "$work/calls" 2>/dev/null; exit 1; }

# pip finishes while the head start builds: the build is interrupted.
: >"$work/calls"
sleep 2 &
pip=$!
status=0
timeout 60 "$prebuild" "$work/log" "$pip" //coordinator:hpt_coordinator //hptctl || status=$?
[ "$status" = 3 ] || fail "prebuild ended with $status, not 3 (handed over), after pip did"
grep -qx "query --keep_going kind('cc_library|genrule', deps(//coordinator:hpt_coordinator + //hptctl))" \
  "$work/calls" || fail "the query did not name both targets"
grep -qx 'build --keep_going //lib:a //lib:b' "$work/calls" ||
  fail "the build did not take the query's targets"
grep -qx interrupted "$work/calls" || fail "the build was not interrupted"
echo "ok: interrupted when pip finished first"

# The head start finishes before pip: it runs to its end, pip untouched.
: >"$work/calls"
touch "$work/finish"
sleep 300 &
pip=$!
timeout 60 "$prebuild" "$work/log" "$pip" //hptctl || fail "prebuild did not end with 0"
grep -qx finished "$work/calls" || fail "the build did not run to its end"
grep -q interrupted "$work/calls" && fail "a build that finished first was interrupted"
kill -0 "$pip" || fail "pip was stopped"
kill "$pip"
rm "$work/finish"
echo "ok: ran to its end when it finished first"

# pip already done (a zombie: exited, its parent not yet told): no build.
: >"$work/calls"
bash -c 'sleep 0.1 & exec sleep 5' &
parent=$!
sleep 1
zombie=$(pgrep -P "$parent" sleep || true)
[ -n "$zombie" ] && [ "$(sed -E 's/^.*\) (.).*$/\1/' "/proc/$zombie/stat")" = Z ] ||
  fail "could not make a zombie to stand for pip"
timeout 60 "$prebuild" "$work/log" "$zombie" //hptctl || fail "prebuild did not end with 0"
grep -q '^build' "$work/calls" && fail "a build started after pip had finished"
echo "ok: no head start once pip is done"
