"""Import-only stand-in for torchvision (see spectui_standin)."""
from spectui_standin import install

install(__name__)
__version__ = "0.0.0+standin"
