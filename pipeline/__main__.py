import sys

from relpipe.pipeline.cli import main

sys.exit(main())
