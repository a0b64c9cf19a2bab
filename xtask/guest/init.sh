#!/bin/sh
# PID 1 of a kernel-matrix guest (busybox, in the initramfs `cargo xtask test --kernel`
# builds; xtask/src/kernels/initrd.rs). It reaches the host's userland over virtiofs (tag
# hostroot, read-only) with a tmpfs overlay on top so tests can write, loads the modules
# the lab needs from this kernel's own module tree (a host directory named on the kernel
# command line), mounts what a node has (cgroup2 alone at /sys/fs/cgroup, bpffs, tracefs),
# and execs run.sh from the results share (tag outshare) chrooted there. The exec keeps it
# PID 1: systemctl refuses to work in a chroot that is not PID 1's.
export PATH=/bin:/sbin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
say() { echo "guest: $*"; echo "$*" >> /out/init.log 2>/dev/null; }
die() { say "FATAL: $*"; sync; poweroff -f; }
for m in virtio_pci fuse virtiofs overlay; do modprobe $m 2>/dev/null; done
mount -t virtiofs -o ro hostroot /host || die "no hostroot share"
mount -t virtiofs outshare /out || die "no outshare"
KV=$(uname -r)
MODS=$(sed -n 's/.*lifeline\.modules=\([^ ]*\).*/\1/p' /proc/cmdline)
say "kernel $KV; modules from $MODS; up $(cut -d' ' -f1 /proc/uptime)s"
mount --bind "/host$MODS" /lib/modules/$KV || die "no module tree at $MODS"
# The kernel's own module autoload (nft, ss) runs this, in the initramfs's root.
echo /sbin/modprobe > /proc/sys/kernel/modprobe
for m in $(cat /out/modules); do
  if modprobe $m 2>/tmp/err; then say "modprobe $m: ok"; else say "modprobe $m: $(cat /tmp/err)"; fi
done
mount -t tmpfs ov /ov; mkdir -p /ov/u /ov/w
mount -t overlay overlay -o lowerdir=/host,upperdir=/ov/u,workdir=/ov/w /newroot || die "overlay"
R=/newroot
mount -t proc proc $R/proc; mount -t sysfs sys $R/sys; mount -t devtmpfs dev $R/dev
mkdir -p $R/dev/pts $R/dev/shm; mount -t devpts devpts $R/dev/pts; mount -t tmpfs shm $R/dev/shm
mount -t tmpfs run $R/run; mkdir -p $R/run/systemd $R/run/lifeline-matrix
mount --bind /out $R/run/lifeline-matrix
mount -t cgroup2 cgroup2 $R/sys/fs/cgroup || die "cgroup2"
mount -t bpf bpf $R/sys/fs/bpf || die "bpffs"
mount -t tracefs tracefs $R/sys/kernel/tracing || say "no tracefs"
mkdir -p $R/lib/modules/$KV && mount --bind /lib/modules/$KV $R/lib/modules/$KV
ip link set lo up
say "userland ready; up $(cut -d' ' -f1 /proc/uptime)s"
exec chroot $R /bin/bash /run/lifeline-matrix/run.sh
