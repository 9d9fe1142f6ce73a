"""The measures stage: the paper's equations (`equations`) over a layer's rows (`rows`,
`components`), every measure of one layer (`analysis`) with its summaries and intervals
(`summary`), isotropy, positions, ranks, degeneration, the corrections (`transforms`)
and the layer they are measured on (`layers`), the static vectors (`static`) and the
paper's published numbers (`reference`)."""
