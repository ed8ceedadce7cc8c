import sys

from wikimem.cli import main

sys.exit(main())
