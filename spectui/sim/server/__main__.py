import sys

from spectui.sim.server.app import main

if __name__ == "__main__":
    sys.exit(main())
