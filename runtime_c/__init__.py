"""The C runtime shipped inside every MLF (a package only so that pip installs its files)."""
import os

RUNTIME_DIR = os.path.dirname(os.path.abspath(__file__))
