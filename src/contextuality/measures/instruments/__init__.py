"""The measures of a layer, one module each (or each family): its compute functions and
its records (``MEASURES``, a tuple of `contextuality.measures.record.Measure`). The
registry (`contextuality.measures.registry`) finds every module here: adding a measure is
adding a module, with nothing else to list."""
