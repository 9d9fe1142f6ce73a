"""The geometry stage: linear CKA from cross-products over chunks of rows (`similarity`),
its sampled rows and between-layer and between-model tables (`cka`), intrinsic dimension
(`dimension`)."""
