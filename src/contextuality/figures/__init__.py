"""The figures stage: the figure specifications (`specs`), the paper's figures and the
shared plotting helpers (`paper`), degeneration, geometry and sweep figures."""
