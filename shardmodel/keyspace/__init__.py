"""Pure key math, no I/O: strategies, layouts, physical keys and the phase rules."""
