"""The alignment measures, one module each (or each family): its records (``MEASURES``, a
tuple of `contextuality.geometry.alignment_record.AlignmentMeasure`). The catalogue
(`contextuality.geometry.alignment_catalogue`) finds every module here: adding an alignment
measure is adding a module, with nothing else to list."""
