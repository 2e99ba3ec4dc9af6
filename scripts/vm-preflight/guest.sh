#!/bin/bash
# throwaway pre-flight harness: runs inside the guest after switch_root
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
ip link set lo up 2>/dev/null || busybox ip link set lo up
mount -t cgroup2 none /sys/fs/cgroup
echo "+memory +io +cpu +pids" > /sys/fs/cgroup/cgroup.subtree_control
K=$(uname -r | cut -d- -f2); modprobe -d /var/tmp/vmseeds-k/k$K -a vfat zram loop nls_cp437 nls_iso8859-1 nls_utf8 nls_ascii || echo MODPROBE FAILED
export XDG_CACHE_HOME=/var/tmp/vmseeds-out/cache-$K
CMDFILE=$(tr ' ' '\n' < /proc/cmdline | sed -n 's/^vmseeds.cmd=//p')
echo "guest $(uname -r) MemTotal $(grep MemTotal /proc/meminfo) running $CMDFILE"
bash "$CMDFILE"
echo "VMSEEDS-EXIT $?"
sync
echo o > /proc/sysrq-trigger
sleep 5
