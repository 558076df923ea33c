import pathlib
import sys

# Test helpers (the rules oracle) import as top-level modules.
sys.path.insert(0, str(pathlib.Path(__file__).parent))
