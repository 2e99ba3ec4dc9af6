"""Kernel builds: a kernel under test built from source, with patches, before the VM runner boots it.

``spec`` parses what ``--kernel`` names to build (``source``, ``source:PKG``, ``tree:PATH``,
``git:PATH@REF``); ``source`` prepares the source tree of each kind and says what version it is;
``kconfig`` merges the config fragments onto tinyconfig and names every option ``olddefconfig``
dropped with its unmet dependency; ``patches`` reads a series (patch files, ``git format-patch``
files, mbox series, quilt series files) and applies and reverts it with GNU patch; ``build``
runs kbuild out of tree (one object tree per source and fragment set, so a patched build
recompiles only what its patches touch), caches the images and hands the VM runner a built
``GuestKernel``.  See docs/kernels.md.
"""
