from objpert.cli import main

raise SystemExit(main())
