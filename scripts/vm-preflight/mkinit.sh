#!/bin/bash
# throwaway pre-flight harness (not part of mmbench): initramfs that mounts the host root over virtiofs
set -e
K=$1; REL=6.1.0-$K-cloud-amd64; D=/var/tmp/vmseeds-k/init-$K
rm -rf $D; mkdir -p $D/bin $D/mods $D/proc $D/sys $D/dev $D/newroot
cp /usr/bin/busybox $D/bin/busybox
for m in drivers/virtio/virtio drivers/virtio/virtio_ring drivers/virtio/virtio_pci_legacy_dev drivers/virtio/virtio_pci_modern_dev drivers/virtio/virtio_pci fs/fuse/fuse fs/fuse/virtiofs drivers/block/virtio_blk; do
  cp /var/tmp/vmseeds-k/k$K/lib/modules/$REL/kernel/$m.ko $D/mods/
done
cat > $D/init <<EOI
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in virtio virtio_ring virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci fuse virtiofs virtio_blk; do insmod /mods/\$m.ko; done
mount -t virtiofs -o ro hostroot /newroot || { echo ROOT MOUNT FAILED; poweroff -f; }
for d in tmp run var/lib/mmbench; do mount -t tmpfs tmpfs /newroot/\$d; done
mount -t virtiofs out /newroot/var/tmp/vmseeds-out
mount -t ext4 /dev/vda /newroot/var/tmp/vmseeds-out/scratch
mount --move /proc /newroot/proc; mount --move /sys /newroot/sys; mount --move /dev /newroot/dev
exec switch_root /newroot /bin/bash /var/tmp/vmseeds-k/guest.sh
EOI
chmod +x $D/init
(cd $D && find . | cpio -o -H newc 2>/dev/null | gzip -1 > /var/tmp/vmseeds-k/initrd-$K.gz)
echo built /var/tmp/vmseeds-k/initrd-$K.gz
