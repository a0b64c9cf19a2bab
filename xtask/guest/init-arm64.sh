#!/bin/busybox sh
# PID 1 of an arm64 kernel-matrix guest (xtask/src/kernels/arm64.rs). The host's userland is
# x86_64, so this guest has its own: arm64 static busybox and the static aarch64 agent, both
# in the initramfs with the few modules `check` needs (inet_diag, tcp_diag: sock_diag's TCP
# listing and SOCK_DESTROY). It mounts what a node has (cgroup2 alone at /sys/fs/cgroup,
# bpffs, tracefs), runs `lifeline check` and prints its output between markers on the serial
# console, which xtask reads back.
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t cgroup2 cgroup2 /sys/fs/cgroup; mount -t bpf bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
# The kernel's own module autoload runs this.
echo /bin/modprobe > /proc/sys/kernel/modprobe
for m in inet_diag tcp_diag; do modprobe $m || echo "@@modprobe $m failed"; done
ip link set lo up
echo "127.0.0.1 localhost" > /etc/hosts
cg=/sys/fs/cgroup/lifeline-check
mkdir -p $cg
start=$(date +%s)
echo "@@check-begin"
/bin/lifeline check --cgroup $cg 2>&1
echo "@@check-exit $?"
echo "@@runner-secs $(( $(date +%s) - start ))"
rmdir $cg
# PID 1 must not exit (the kernel would panic): power off instead.
poweroff -f || echo o > /proc/sysrq-trigger
sleep 30
