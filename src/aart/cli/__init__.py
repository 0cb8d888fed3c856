"""The ``aart`` command line: one module per command; ``main`` only wires them."""
