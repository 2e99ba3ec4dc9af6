#!/bin/bash
# throwaway pre-flight: boot kernel K with MEM and run command file CMD; prints wall time
cd /var/tmp/vmseeds-k  # kernels, initrd-K.gz and guest.sh live here
K=$1; MEM=$2; CMD=$3; TAG=$4; NUMA=${5:-1}
REL=6.1.0-$K-cloud-amd64; W=/var/tmp/vmseeds-k/run-$TAG; rm -rf $W; mkdir -p $W
truncate -s 12G $W/scratch.img && mkfs.ext4 -q -F $W/scratch.img
/usr/lib/qemu/virtiofsd --socket-path=$W/root.sock -o source=/ -o cache=auto -o sandbox=chroot >$W/vfs-root.log 2>&1 & echo $! > $W/vfs1.pid
/usr/lib/qemu/virtiofsd --socket-path=$W/out.sock -o source=/var/tmp/vmseeds-out -o cache=auto -o sandbox=chroot >$W/vfs-out.log 2>&1 & echo $! > $W/vfs2.pid
sleep 1
if [ "$NUMA" = 2 ]; then
  H=$(( ${MEM%M} / 2 ))
  NUMAARGS="-object memory-backend-memfd,id=m0,size=${H}M,share=on -object memory-backend-memfd,id=m1,size=${H}M,share=on -numa node,memdev=m0,cpus=0 -numa node,memdev=m1,cpus=1"
else
  NUMAARGS="-object memory-backend-memfd,id=mem,size=$MEM,share=on -numa node,memdev=mem"
fi
t0=$(date +%s.%N)
timeout 3000 qemu-system-x86_64 -accel tcg -cpu max -m $MEM -smp 2 $NUMAARGS \
  -chardev socket,id=c0,path=$W/root.sock -device vhost-user-fs-pci,chardev=c0,tag=hostroot \
  -chardev socket,id=c1,path=$W/out.sock -device vhost-user-fs-pci,chardev=c1,tag=out \
  -drive file=$W/scratch.img,if=virtio,format=raw \
  -kernel k$K/boot/vmlinuz-$REL -initrd initrd-$K.gz -append "console=ttyS0 panic=-1 vmseeds.cmd=$CMD" \
  -nographic -no-reboot > $W/console.log 2>&1 & echo $! > $W/qemu.pid
wait $(cat $W/qemu.pid)
t1=$(date +%s.%N)
kill $(cat $W/vfs1.pid) $(cat $W/vfs2.pid) 2>/dev/null
echo "wall $(echo "$t1 - $t0" | bc) s"; tail -5 $W/console.log
rm -f $W/scratch.img
