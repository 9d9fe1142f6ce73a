"""The measures stage: the paper's equations (`equations`) over a layer's rows (`rows`,
`components`, `occurrences`), the registry of every measure of a layer (`registry`, each a
`record.Measure` computed by `paper_measures`, `isotropy_scores` or `later_positions`),
one layer measured (`analysis`) with its summaries and intervals (`summary`), isotropy,
positions, ranks, degeneration, the transforms (`transforms`) and the layer they are
measured on (`layers`), the static vectors (`static`) and the paper's published numbers
(`reference`)."""
