"""The geometry stage: linear CKA from cross-products over chunks of rows (`linear_cka`),
its sampled rows and between-layer and between-model tables (`cka`), intrinsic dimension
(`dimension`)."""
