"""The kernel stage: every way of getting a kernel under test turns a ``KernelRequest`` into the
``GuestKernel`` the VM runner boots (``resolve.get_kernel``): built from source (``build``,
``source``, ``spec``, ``kconfig``, ``patches``, ``symbols``) or prebuilt (``prebuilt``).
See docs/kernels.md.
"""
