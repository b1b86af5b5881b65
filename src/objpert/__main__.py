"""``python -m objpert``: the ``objpert`` command (:mod:`objpert.cli`)."""

from objpert.cli import main

raise SystemExit(main())
