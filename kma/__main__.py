from kma.cli import main

raise SystemExit(main())
