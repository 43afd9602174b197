import sys

from gpustack.cli import main

sys.exit(main())
