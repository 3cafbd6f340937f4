import sys

from testbed.docs.pages import main

sys.exit(main())
