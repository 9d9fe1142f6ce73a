"""Files in and out: provenance records and atomic writes, tables, verified downloads."""
