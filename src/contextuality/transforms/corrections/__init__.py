"""The corrections of a space, one module each: its records (``CORRECTIONS``, a tuple of
`contextuality.transforms.record.Correction`) and where they come among the transforms
(``ORDER``). `contextuality.transforms.fitting` finds every module here: adding a
correction is adding a module, with nothing else to list."""
