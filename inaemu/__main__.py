from inaemu.cli import main

raise SystemExit(main())
