"""Where vectors are kept: HDF5 files with provenance attributes (`hdf5`), and the
embedding shards, one file per (model, layer), rows aligned with the occurrence index
(`shards`)."""
