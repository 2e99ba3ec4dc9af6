"""The kernel stage: every way of getting a kernel under test turns a ``KernelRequest`` into the
``GuestKernel`` the VM runner boots (``resolve.get_kernel``).

``prebuilt`` finds kernels mmbench does not build (a Debian package, an image path, a build tree);
``spec`` parses what ``--kernel`` names to build (``source``, ``source:PKG``, ``tree:PATH``,
``git:PATH@REF``); ``source`` prepares each kind of source tree; ``kconfig`` merges the config
fragments onto tinyconfig; ``patches`` applies and reverts a series; ``build`` runs kbuild out of
tree and caches the images.  See docs/kernels.md.
"""
