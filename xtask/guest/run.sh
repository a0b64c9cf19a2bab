#!/bin/bash
# The kernel-matrix guest's runner: PID 1, in the host's userland (init.sh chroots into an
# overlay of it). Reads plan.env and tests.list beside it, which xtask wrote
# (xtask/src/kernels/build.rs: the release agent, the lab's test executable, the tests), runs
# `lifeline check` and every test with a timeout, PARALLEL at a time, writes each one's
# output and exit code into this directory (the results share) and powers the guest off.
set -u
OUT=/run/lifeline-matrix
# shellcheck source=/dev/null
. $OUT/plan.env
export LIFELINE_BIN LAB_NO_FALSE_POSITIVE_SECS RUST_BACKTRACE=0 HOME=/root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
start=$(date +%s)
uname -r > $OUT/kernel
mkdir -p $OUT/tests
cg=/sys/fs/cgroup/lifeline-check
mkdir -p $cg
"$LIFELINE_BIN" check --cgroup $cg > $OUT/check.txt 2>&1
echo "exit $?" >> $OUT/check.txt
rmdir $cg

one() { # NAME EXECUTABLE TEST
    local s rc
    s=$(date +%s)
    timeout -k 10 "$TEST_TIMEOUT" "$2" --exact "$3" --test-threads=1 --nocapture \
        > "$OUT/tests/$1.log" 2>&1
    rc=$?
    echo "$rc $(( $(date +%s) - s ))" > "$OUT/tests/$1.rc"
}
while read -r name exe test; do
    while [ "$(jobs -rp | wc -l)" -ge "$PARALLEL" ]; do wait -n; done
    one "$name" "$exe" "$test" &
done < $OUT/tests.list
wait
echo "$(( $(date +%s) - start ))" > $OUT/runner-secs
dmesg > $OUT/dmesg.txt
sync
# PID 1 must not exit (the kernel would panic): power off instead.
busybox poweroff -f || echo o > /proc/sysrq-trigger
sleep 30
