"""``python -m objpert.cli``: the ``objpert`` command."""

from objpert.cli import main

raise SystemExit(main())
