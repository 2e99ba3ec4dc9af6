"""The shared vocabulary every stage may import: the result data model (``results``), declared
parameters and their validation (``params``, ``sizes``), the result-store interface (``store``) and
the kernel quirks as data (``quirks``).  Nothing here imports a stage; the stages import this."""
