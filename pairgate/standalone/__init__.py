"""The reader's sources: the modules scripts/assemble-ownership.py assembles into ownership.py.

Each module imports only the standard library, the runtime dependencies and its siblings (by
``from pairgate.standalone.<module> import <names>``, which the assembler drops, since the
assembled file is one namespace). The package imports these modules; CI, the merge hook and
the flat doors run the assembled ``pairgate/ownership.py``.
"""
