"""Kernels under test in a QEMU guest: kernel resolution, the guest's initramfs, boot, and the host-side runner."""
