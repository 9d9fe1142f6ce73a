"""Records found in the modules of a package: the catalogues of instruments."""
