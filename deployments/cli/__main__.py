from . import entry_point

entry_point()
